package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/keygroup"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
	"github.com/connector-dev/connector/state"
	"github.com/connector-dev/connector/transform"
)

// errPermanent marks failures a restart cannot fix (the job exits at once).
var errPermanent = errors.New("permanent failure")

// attempt is one run of the job from its last completed checkpoint (DESIGN,
// "Restart"): everything it opens it closes before it returns.
type attempt struct {
	j        *Job
	closers  []func() // run in reverse order on exit
	progress bool     // a checkpoint completed during this attempt
	started  bool     // the tasks ran
}

func (a *attempt) defer_(f func()) { a.closers = append(a.closers, f) }

func (a *attempt) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// run restores the job and runs it until it fails, ctx ends, or stop is
// closed and a final checkpoint completed (then it returns nil).
func (a *attempt) run(ctx context.Context, stop <-chan struct{}) error {
	defer a.close()
	j, cfg, log := a.j, a.j.cfg, a.j.log
	p := cfg.Pipeline.Parallelism

	// 1. The newest completed checkpoint, and what each part restores from it.
	st, err := store.Open(j.fs, cfg.Checkpoint.Dir, cfg.State.Dir, cfg.Checkpoint.Retained, log)
	if err != nil {
		return fmt.Errorf("open checkpoint store: %w", err)
	}
	a.defer_(func() { _ = st.Close() })
	md, err := st.LoadLatest()
	if err != nil {
		return fmt.Errorf("load checkpoint: %w", err)
	}
	rs, err := fromMetadata(md)
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	specs, stateful := transformSpecs(cfg.Pipeline.Transforms)
	if stateful && len(rs.state) > 0 && rs.workers != p {
		return fmt.Errorf("%w: checkpoint %d has keyed state for %d workers but pipeline.parallelism is %d; keyed state cannot be redistributed yet: set parallelism back to %d",
			errPermanent, rs.id, rs.workers, p, rs.workers)
	}
	if md != nil {
		log.Info().Uint64("checkpoint", uint64(md.ID)).Str("offsets", rs.offsets.String()).Msg("restoring from checkpoint")
	} else {
		log.Info().Msg("no completed checkpoint: starting from the group's offsets or source.start_offset")
	}

	// 2. Sinks: commit the restored checkpoint's output again (idempotent)
	// and remove everything that belongs to no completed checkpoint.
	snk, err := newSink(cfg, j.fs, log)
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	a.defer_(func() { _ = snk.Close() })
	if err := snk.Recover(ctx, rs.committables); err != nil {
		return fmt.Errorf("recover sink: %w", err)
	}
	crashpoint.Hit(crashpoint.DuringRestore)

	// 3. State: drop snapshots no checkpoint references, restore each worker.
	states := &stateFiles{root: cfg.State.Dir, log: log}
	if keep, err := st.Referenced(); err == nil {
		states.keepOnly(keep)
	}
	stores := make([]*state.Store, p)
	if stateful {
		for w := range p {
			// Every worker's state is key group 0 of 1 until workers route
			// records by key group: restored 1:1, parallelism unchanged.
			one := keygroup.Range{Start: 0, End: 1}
			sc := state.Config{Dir: states.workDir(w), MaxParallelism: 1, KeyGroups: one, FullSnapshotAfter: int64(cfg.State.FullSnapshotAfter)}
			c, restore := rs.state[w]
			if restore {
				chain := state.Chain{Base: states.abs(c.base)}
				for _, l := range c.changelogs {
					chain.Changelogs = append(chain.Changelogs, states.abs(l))
				}
				sc.Restore = []state.Restore{{Chain: chain, KeyGroups: one}}
			}
			s, err := state.Open(sc, log.With().Int("worker", w).Logger())
			if err != nil {
				return fmt.Errorf("restore state of worker %d: %w", w, err)
			}
			if restore {
				log.Info().Int("worker", w).Str("full", c.base).Int("changelogs", len(c.changelogs)).Msg("state restored")
			}
			a.defer_(func() { _ = s.Close() })
			stores[w] = s
		}
	}

	// 4. Source: seek every partition to the restored offsets. Retries
	// while the brokers are unreachable; the job is not ready meanwhile.
	octx, cancelOpen := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
		case <-octx.Done():
		}
		cancelOpen()
	}()
	var restoredOffsets source.Offsets // nil: no checkpoint to restore
	if md != nil {
		restoredOffsets = rs.offsets
	}
	src, err := source.Open(octx, sourceConfig(cfg), restoredOffsets, log)
	cancelOpen()
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	a.defer_(src.Close)
	if md != nil {
		// Repairs a crash between persisting md and committing its offsets.
		if err := src.Commit(ctx, rs.offsets); err != nil {
			log.Warn().Err(err).Msg("re-committing the restored checkpoint's offsets failed")
		}
	}

	// 5. Dead-letter producer, if configured.
	bad := &badRecords{policy: cfg.Pipeline.OnDecodeError.Policy, topic: cfg.Pipeline.OnDecodeError.Topic, metrics: j.metrics, log: log}
	if bad.policy == "dead_letter" {
		dlq, err := kgo.NewClient(append(kafkaOpts(cfg), kgo.SeedBrokers(cfg.Kafka.Brokers...))...)
		if err != nil {
			return fmt.Errorf("dead-letter producer: %w", err)
		}
		a.defer_(dlq.Close)
		bad.dlq = dlq
	}

	// 6. The task graph: P readers x P workers, one bounded channel each.
	events := make(chan checkpoint.Event, 4*p+64)
	chans := make([][]chan element, p) // [reader][worker]
	for r := range chans {
		chans[r] = make([]chan element, p)
		for w := range chans[r] {
			chans[r][w] = make(chan element, channelCapacity(cfg.Pipeline.ChannelCapacity, source.DefaultBatchSize))
		}
	}
	coord, err := checkpoint.NewCoordinator(coordinatorSettings(cfg.Checkpoint), taskIDs(p), md, max(st.MaxID(), states.maxID()))
	if err != nil {
		return fmt.Errorf("%w: coordinator: %w", errPermanent, err)
	}
	writers := make([]sink.Writer, p)
	workers := make([]*worker, p)
	for w := range p {
		wr, err := snk.NewWriter(w)
		if err != nil {
			return fmt.Errorf("sink writer %d: %w", w, err)
		}
		a.defer_(func() { _ = wr.Close() })
		writers[w] = wr
		ins := make([]chan element, p)
		for r := range p {
			ins[r] = chans[r][w]
		}
		al, err := checkpoint.NewAligner[batch](checkpoint.AlignerSettings{Channels: p, Mode: coord.Mode()})
		if err != nil {
			return fmt.Errorf("%w: aligner: %w", errPermanent, err)
		}
		var chain *transform.Chain
		if len(specs) > 0 {
			var kv transform.KV = transform.NewMemKV() // unused by stateless chains
			if stores[w] != nil {
				kv = stores[w]
			}
			if chain, err = transform.Build(specs, kv); err != nil {
				return fmt.Errorf("%w: transforms: %w", errPermanent, err)
			}
		}
		workers[w] = &worker{
			index: w, task: workerTask(w), ins: ins, aligner: al, chain: chain, state: stores[w],
			states: states, writer: wr, bad: bad, events: events, metrics: j.metrics,
			aborts: make(chan checkpoint.ID, 64),
			log:    log.With().Str("task", string(workerTask(w))).Logger(),
		}
	}

	// 7. Start the tasks; a task that fails reports TaskFailed to the driver.
	tctx, cancelTasks := context.WithCancel(ctx)
	var wg sync.WaitGroup
	a.defer_(func() { cancelTasks(); wg.Wait() }) // stops tasks before anything they use is closed
	fail := func(task checkpoint.TaskID, err error) {
		if err != nil && tctx.Err() == nil {
			_ = sendEvent(tctx, events, checkpoint.TaskFailed{Task: task, Err: err})
		}
	}
	readers := src.Readers()
	for i, r := range readers {
		em := newEmitter(sourceTask(i), chans[i], events, j.metrics)
		wg.Go(func() { fail(sourceTask(i), r.Run(tctx, em)) })
	}
	for _, w := range workers {
		wg.Go(func() { fail(w.task, w.run(tctx)) })
	}
	oc := newOffsetCommitter(src, j.metrics, log)
	wg.Go(func() { oc.run(tctx) })
	wg.Go(func() { discover(tctx, src, j.discoverEvery, log) })

	d := &driver{
		coord: coord, store: st, readers: readers, sink: snk, writers: writers, workers: workers, offsets: oc,
		states: states, events: events, metrics: j.metrics, log: log,
		persisted: map[checkpoint.ID]persisted{},
		onCommit: func(md checkpoint.Metadata, r restored) {
			a.progress = true
			j.last.Store(&Completion{ID: uint64(md.ID), TriggeredAt: md.Timestamp, CompletedAt: time.Now(), Offsets: r.offsets.String(), Tasks: len(md.Tasks)})
		},
	}
	j.setReady(true)
	a.started = true
	defer j.setReady(false)
	log.Info().Int("parallelism", p).Bool("stateful", stateful).Msg("job running")
	return d.loop(ctx, stop, tickPeriod(cfg.Checkpoint.Interval, cfg.Checkpoint.Timeout), cfg.Checkpoint.Timeout)
}

// discover looks for new partitions periodically.
func discover(ctx context.Context, src *source.Source, every time.Duration, log zerolog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := src.Discover(ctx); err != nil && ctx.Err() == nil {
				log.Warn().Err(err).Msg("partition discovery failed")
			}
		}
	}
}

// tickPeriod ticks the Coordinator ten times per interval (or timeout, if
// shorter), between 5ms and 100ms.
func tickPeriod(interval, timeout time.Duration) time.Duration {
	return min(max(min(interval, timeout)/10, 5*time.Millisecond), 100*time.Millisecond)
}
