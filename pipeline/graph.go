package pipeline

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
	"github.com/connector-dev/connector/transform"
)

// graph is the job's task graph for one attempt: P source readers, each
// with an emitter holding one bounded channel to each of P workers, and
// the driver that owns the Coordinator. Nothing runs until the attempt
// starts it.
type graph struct {
	source   source.Source
	readers  []source.Reader
	emitters []*emitter // emitters[i] is reader i's output
	chans    [][]chan element
	workers  []*worker
	events   chan checkpoint.Event
	driver   *driver
	routing  routing // pipeline.route as decided for this attempt
	// stopAt is the final checkpoint once a stop was requested: the
	// driver sets it, the emitters mark its barrier (and later ones) Final.
	stopAt atomic.Uint64
}

// build is the attempt's second phase: it wires what restore opened into a
// graph (DESIGN, "The mechanism": sources, aligned workers, a Coordinator).
func (a *attempt) build(r *restoredJob) (*graph, error) {
	j, cfg, log := a.j, a.j.cfg, a.j.log
	p := cfg.Pipeline.Parallelism
	g := &graph{source: r.source, readers: r.source.Readers(), events: make(chan checkpoint.Event, 4*p+64)}
	if len(g.readers) != p {
		return nil, fmt.Errorf("%w: source made %d readers for parallelism %d", errPermanent, len(g.readers), p)
	}
	rt, err := route(cfg.Pipeline, r.stateful, r.source)
	if err != nil {
		return nil, err
	}
	g.routing = rt
	log.Info().Stringer("route", rt).Str("because", rt.why).Msg("records go from readers to workers")
	g.chans = make([][]chan element, p) // [reader][worker]
	for i := range g.chans {
		g.chans[i] = make([]chan element, p)
		for w := range g.chans[i] {
			g.chans[i][w] = make(chan element, channelCapacity(cfg.Pipeline.ChannelCapacity, batchRecords))
		}
		em := newEmitter(task{sourceTask, i}, g.chans[i], g.events, j.metrics, cfg.Pipeline.MaxParallelism, cfg.Pipeline.KeyBy, &g.stopAt)
		em.byPartition = rt.byPartition
		g.emitters = append(g.emitters, em)
	}
	coord, err := checkpoint.NewCoordinator(coordinatorSettings(cfg.Checkpoint.Config, j.rand), taskIDs(p), r.md, max(r.store.MaxID(), j.history.maxTriggered(), r.after))
	if err != nil {
		return nil, fmt.Errorf("%w: coordinator: %w", errPermanent, err)
	}
	writers := make([]sink.Writer, p)
	var deadWriters []sink.Writer // exactly_once dead letters only
	for w := range p {
		if writers[w], err = r.sink.NewWriter(w); err != nil {
			return nil, fmt.Errorf("sink writer %d: %w", w, err)
		}
		a.defer_(func() { _ = writers[w].Close() })
		wk, err := a.newWorker(r, g, w, writers[w], coord.Mode())
		if err != nil {
			return nil, err
		}
		if r.deadLetterSink != nil {
			dw, err := r.deadLetterSink.NewWriter(w)
			if err != nil {
				return nil, fmt.Errorf("dead-letter writer %d: %w", w, err)
			}
			a.defer_(func() { _ = dw.Close() })
			wk.deadLetters = dw
			deadWriters = append(deadWriters, dw)
		}
		g.workers = append(g.workers, wk)
	}
	g.driver = &driver{
		job: j.cfg.Name, coord: coord, store: r.store, readers: g.readers, stopAt: &g.stopAt, sink: r.sink, writers: writers, workers: g.workers,
		deadLetters: r.deadLetterSink, deadLetterWriters: deadWriters,
		offsets: newOffsetCommitter(r.source, j.metrics, log),
		events:  g.events, metrics: j.metrics, health: &j.health, history: &j.history, log: log,
		persisted:     map[checkpoint.ID]persisted{},
		commitTimeout: commitBound(j.cfg.Checkpoint.Timeout),
		onCommit: func(md checkpoint.Metadata, rs restored) {
			a.progress = true
			j.last.Store(&Completion{ID: uint64(md.ID), TriggeredAt: md.Timestamp, CompletedAt: time.Now(),
				Offsets: r.source.Describe(rs.positions), Tasks: len(md.Tasks)})
		},
	}
	// Detached before anything it reads is closed: closers run in reverse.
	a.defer_(j.metrics.attempt.attach(&attemptObjects{source: r.source, sink: r.sink, chains: g.chains(), stores: r.stores}))
	return g, nil
}

// chains are the workers' transform chains, nil entries for none.
func (g *graph) chains() []*transform.Chain {
	cs := make([]*transform.Chain, len(g.workers))
	for i, w := range g.workers {
		cs[i] = w.chain
	}
	return cs
}

// newWorker makes worker w: its input channels (one from each reader), its
// aligner and its transforms on its keyed state.
func (a *attempt) newWorker(r *restoredJob, g *graph, w int, wr sink.Writer, mode checkpoint.Mode) (*worker, error) {
	ins := make([]chan element, len(g.chans))
	for i := range g.chans {
		ins[i] = g.chans[i][w]
	}
	al, err := checkpoint.NewAligner[batch](checkpoint.AlignerSettings{Channels: len(ins), Mode: mode})
	if err != nil {
		return nil, fmt.Errorf("%w: aligner: %w", errPermanent, err)
	}
	var chain *transform.Chain
	if len(r.specs) > 0 {
		var kv transform.KV = transform.NewMemKV() // unused by stateless chains
		if r.stores[w] != nil {
			kv = r.stores[w]
		}
		if chain, err = transform.Build(r.specs, kv); err != nil {
			return nil, fmt.Errorf("%w: transforms: %w", errPermanent, err)
		}
		if kb := a.j.cfg.Pipeline.KeyBy; kb != "" {
			chain.UseKeyField(kb) // the emitter marks where the field is
		}
	}
	t := task{workerTask, w}
	return &worker{
		index: w, task: t, ins: ins, aligner: al, chain: chain, state: r.stores[w],
		states: r.states, writer: wr, bad: r.bad, events: g.events, metrics: a.j.metrics,
		aborts: make(chan checkpoint.ID, 64), spawn: a.j.spawn, maxParallelism: a.j.cfg.Pipeline.MaxParallelism, keyBy: a.j.cfg.Pipeline.KeyBy,
		dedupKeys: transform.DedupKeys(r.specs),
		log:       a.j.log.With().Str("task", t.String()).Logger(),
	}, nil
}
