package pipeline

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
	"github.com/connector-dev/connector/state"
	"github.com/connector-dev/connector/transform"
)

// restoredJob is what an attempt restored: the parts of the job, each at the
// checkpoint it restarts from, ready to be wired into a graph.
type restoredJob struct {
	restored                      // what the checkpoint holds for each part
	md       *checkpoint.Metadata // the checkpoint; nil: none
	store    *store.Store
	specs    []transform.Spec
	stateful bool
	states   *stateFiles
	sink     sink.Sink
	stores   []*state.Store // per worker; nil entries for a stateless job
	source   source.Source
	bad      *badRecords
}

// restore runs the restore phase: steps 1-5 below, in this order (DESIGN,
// "Restart"). Everything it opens is closed with the attempt. stop, when
// closed, ends the wait for an unreachable source.
func (a *attempt) restore(ctx context.Context, stop <-chan struct{}) (*restoredJob, error) {
	r, err := a.loadCheckpoint()
	if err != nil {
		return nil, err
	}
	if err := a.recoverSink(ctx, r); err != nil {
		return nil, err
	}
	crashpoint.Hit(crashpoint.DuringRestore)
	if err := a.restoreState(r); err != nil {
		return nil, err
	}
	if err := a.openSource(ctx, stop, r); err != nil {
		return nil, err
	}
	if err := a.openDeadLetter(r); err != nil {
		return nil, err
	}
	return r, nil
}

// loadCheckpoint is step 1: the newest completed checkpoint, and what each
// part restores from it.
func (a *attempt) loadCheckpoint() (*restoredJob, error) {
	j, cfg, log := a.j, a.j.cfg, a.j.log
	st, err := store.Open(j.fs, cfg.Checkpoint.Dir, cfg.State.Dir, cfg.Checkpoint.Retained, log)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	a.defer_(func() { _ = st.Close() })
	md, err := st.LoadLatest()
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	rs, err := fromMetadata(md)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPermanent, err)
	}
	r := &restoredJob{restored: rs, md: md, store: st, specs: transform.Specs(cfg.Pipeline.Transforms),
		states: &stateFiles{root: cfg.State.Dir, log: log}}
	r.stateful = transform.Stateful(r.specs)
	p := cfg.Pipeline.Parallelism
	if r.stateful && len(rs.state) > 0 && rs.workers != p {
		return nil, fmt.Errorf("%w: checkpoint %d has keyed state for %d workers but pipeline.parallelism is %d; keyed state cannot be redistributed yet: set parallelism back to %d",
			errPermanent, rs.id, rs.workers, p, rs.workers)
	}
	if md != nil {
		log.Info().Uint64("checkpoint", uint64(md.ID)).Msg("restoring from checkpoint")
	} else {
		r.positions = nil // the source starts from its own fallback
		log.Info().Msg("no completed checkpoint: starting from the source's own position (Kafka: the group's offsets or source.start_offset)")
	}
	return r, nil
}

// recoverSink is step 2: commit the restored checkpoint's output again
// (idempotent) and remove everything that belongs to no completed checkpoint.
func (a *attempt) recoverSink(ctx context.Context, r *restoredJob) error {
	snk, err := sink.New(a.j.cfg.Sink, sink.Env{Job: a.j.cfg, FS: a.j.fs, Log: a.j.log, Stdout: a.j.stdout})
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	a.defer_(func() { _ = snk.Close() })
	if err := snk.Recover(ctx, r.committables); err != nil {
		return fmt.Errorf("recover sink: %w", err)
	}
	r.sink = snk
	return nil
}

// restoreState is step 3: drop snapshots no checkpoint references, restore
// each worker's keyed state.
func (a *attempt) restoreState(r *restoredJob) error {
	cfg, log := a.j.cfg, a.j.log
	if keep, err := r.store.Referenced(); err == nil {
		r.states.keepOnly(keep)
	}
	r.stores = make([]*state.Store, cfg.Pipeline.Parallelism)
	if !r.stateful {
		return nil
	}
	for w := range r.stores {
		sc := state.Config{Dir: r.states.workDir(w), FullSnapshotAfter: int64(cfg.State.FullSnapshotAfter)}
		c, restore := r.state[w]
		if restore {
			sc.RestoreFrom = r.states.abs(c.base)
			for _, l := range c.changelogs {
				sc.Changelogs = append(sc.Changelogs, r.states.abs(l))
			}
		}
		s, err := state.Open(sc, log.With().Int("worker", w).Logger())
		if err != nil {
			return fmt.Errorf("restore state of worker %d: %w", w, err)
		}
		if restore {
			log.Info().Int("worker", w).Str("full", c.base).Int("changelogs", len(c.changelogs)).Msg("state restored")
		}
		a.defer_(func() { _ = s.Close() })
		r.stores[w] = s
	}
	return nil
}

// openSource is step 4: open the source at the restored positions. It
// retries while the input is unreachable (the job is not ready meanwhile),
// until ctx ends or stop is closed.
func (a *attempt) openSource(ctx context.Context, stop <-chan struct{}, r *restoredJob) error {
	j, cfg := a.j, a.j.cfg
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-octx.Done():
		}
		cancel()
	}()
	src, err := source.Open(octx, cfg.Source, source.Env{
		Job: cfg, Readers: cfg.Pipeline.Parallelism, Restored: r.positions, DiscoverEvery: j.discoverEvery, Log: j.log,
		KafkaHooks: j.metrics.kafka.Hooks,
	})
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	a.defer_(src.Close)
	r.source = src
	if r.md != nil {
		j.log.Info().Uint64("checkpoint", uint64(r.md.ID)).Str("positions", src.Describe(r.positions)).Msg("source positioned at the checkpoint")
		// Repairs a crash between persisting md and committing its positions.
		if err := src.Commit(ctx, r.positions); err != nil {
			j.log.Warn().Err(err).Msg("re-committing the restored checkpoint's positions failed")
		}
	}
	return nil
}

// openDeadLetter is step 5: the dead-letter producer, if configured.
func (a *attempt) openDeadLetter(r *restoredJob) error {
	cfg := a.j.cfg
	r.bad = &badRecords{policy: cfg.Pipeline.OnDecodeError.Policy, topic: cfg.Pipeline.OnDecodeError.Topic, metrics: a.j.metrics, log: a.j.log}
	if r.bad.policy != "dead_letter" {
		return nil
	}
	dlq, err := kgo.NewClient(append(kafkaclient.Opts(cfg.Kafka), kgo.WithHooks(a.j.metrics.kafka.Hooks("dead-letter")...))...)
	if err != nil {
		return fmt.Errorf("dead-letter producer: %w", err)
	}
	a.defer_(dlq.Close)
	r.bad.dlq = dlq
	return nil
}
