package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/keygroup"
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
	skipped  []store.Skipped      // newer checkpoints on disk that cannot be restored
	after    checkpoint.ID        // the job's checkpoints are numbered after it (numberAfterVisible); 0: no floor
	store    *store.Store
	specs    []transform.Spec
	stateful bool
	states   *stateFiles
	sink     sink.Sink
	stores   []*state.Store // per worker; nil entries for a stateless job
	source   source.Source
	bad      *badRecords
	// deadLetterSink is the dead-letter topic's transactional sink the
	// workers write to (exactly_once dead letters, deadletter_txn.go);
	// nil otherwise.
	deadLetterSink sink.Sink
}

// restore runs the restore phase (DESIGN, "Restart"): step 1 loads the
// checkpoint; then the sink's recovery (step 2) runs while the state is
// restored (step 3) and the source is opened (step 4); step 5 follows
// them. Steps 2 to 4 share nothing but what step 1 loaded, and each waits
// on its own system (the sink's, the disk, the source's brokers), so a
// restart, and a group's slot handover, waits for the longest of them, not
// their sum. Nothing reads a record before all of them are done.
// Everything it opens is closed with the attempt. stop, when closed, ends
// every wait for a system that cannot be reached: the source's, the
// checkpoint storage's and the sink's (its audit and its Recover retry
// until their context ends; the next start commits the same committables
// again, which Commit takes idempotently).
func (a *attempt) restore(ctx context.Context, stop <-chan struct{}) (*restoredJob, error) {
	r, err := a.loadCheckpoint(ctx, stop)
	if err != nil {
		return nil, err
	}
	sctx, scancel := untilStop(ctx, stop)
	defer scancel()
	snk, err := a.openSink(sctx, r)
	if err != nil {
		return nil, err
	}
	dls, err := a.openDeadLetterSink(r)
	if err != nil {
		return nil, err
	}
	// The first failure is the cause: it ends the others' waits (a failed
	// recovery the source's wait for its brokers, a failed state restore
	// or source open the recovery's retries), and their errors are its
	// echo. A cancellation (stop, or ctx) gives way to a real error that
	// comes after it.
	octx, cancel := context.WithCancel(sctx)
	var (
		mu    sync.Mutex
		cause error
	)
	fail := func(err error) {
		mu.Lock()
		if cause == nil || isCancel(cause) && !isCancel(err) {
			cause = err
		}
		mu.Unlock()
		cancel()
	}
	recovered := make(chan struct{})
	var panicked any // a panic of the recovery, raised again on this goroutine
	go func() {
		defer close(recovered)
		defer func() {
			if p := recover(); p != nil {
				panicked = p
				cancel()
			}
		}()
		if err := a.recoverSink(octx, r, snk); err != nil {
			fail(err)
			return
		}
		if dls != nil {
			if err := a.recoverDeadLetters(octx, r, dls, a.j.cfg.Pipeline.OnDecodeError.Topic); err != nil {
				fail(err)
			}
		}
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				cancel()
				<-recovered // the sink is closed with the attempt, never while its Recover runs
				panic(p)
			}
		}()
		if err := a.restoreState(r); err != nil {
			fail(err)
			return
		}
		if err := octx.Err(); err != nil {
			fail(err) // the recovery's failure, or ctx's end: not opened
			return
		}
		if err := a.openSource(octx, stop, r); err != nil {
			fail(err)
		}
	}()
	<-recovered // in every case: the sink is closed with the attempt, never while its Recover runs
	cancel()
	if panicked != nil {
		panic(panicked)
	}
	if cause != nil {
		return nil, cause
	}
	// Only now, with the checkpoint's output committed again: a position
	// is never committed ahead of its output.
	a.commitRestoredPositions(ctx, r)
	crashpoint.Hit(crashpoint.DuringRestore)
	if err := a.openDeadLetter(ctx, r, dls); err != nil {
		return nil, err
	}
	return r, nil
}

// loadCheckpoint is step 1: the newest completed checkpoint, and what each
// part restores from it. With checkpoint.storage, the storage's newer
// checkpoints are brought into the local directories first (storage.go).
func (a *attempt) loadCheckpoint(ctx context.Context, stop <-chan struct{}) (*restoredJob, error) {
	j, cfg, log := a.j, a.j.cfg, a.j.log
	st, err := store.Open(j.fs, cfg.Checkpoint.Dir, cfg.State.Dir, cfg.Checkpoint.Retained, log)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%w: job %s: %w", errPermanent, cfg.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	a.defer_(func() { _ = st.Close() })
	if err := a.attachStorage(ctx, stop, st); err != nil {
		return nil, err
	}
	md, skipped, err := st.LoadLatest()
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if md != nil && md.Job != "" && md.Job != cfg.Name {
		// Its positions would skip what this job never read, its keyed
		// state drop what it never saw, its committables go to this sink.
		return nil, fmt.Errorf("%w: checkpoint %d in %s was taken by job %s, not %s: a job's name is its checkpoint namespace; give this job its own checkpoint.dir and state.dir, or set name back to %s",
			errPermanent, md.ID, cfg.Checkpoint.Dir, md.Job, cfg.Name, md.Job)
	}
	rs, err := fromMetadata(md)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPermanent, err)
	}
	r := &restoredJob{restored: rs, md: md, skipped: skipped, store: st, specs: transform.Specs(cfg.Pipeline.Transforms),
		states: &stateFiles{root: cfg.State.Dir}}
	r.stateful = transform.Stateful(r.specs)
	warnDedupKeys(log, r.specs, cfg.Pipeline.KeyBy)
	if r.stateful && rs.legacyState {
		return nil, fmt.Errorf("%w: checkpoint %d was written by a version of the connector before key groups, whose keyed state this version cannot place; restore it with that version, or start this job afresh (a new checkpoint.dir and state.dir; the source then resumes from the group's committed offsets)",
			errPermanent, md.ID)
	}
	if m := cfg.Pipeline.MaxParallelism; r.stateful && rs.maxParallelism != 0 && rs.maxParallelism != m {
		return nil, fmt.Errorf("%w: checkpoint %d holds keyed state in %d key groups, but pipeline.max_parallelism is %d: it cannot change once a checkpoint holds keyed state; set it back to %d (pipeline.parallelism may change, up to it)",
			errPermanent, rs.id, rs.maxParallelism, m, rs.maxParallelism)
	}
	if k := cfg.Pipeline.KeyBy; r.stateful && rs.maxParallelism != 0 && rs.keyBy != k {
		return nil, fmt.Errorf("%w: checkpoint %d holds keyed state keyed by %s, but pipeline.key_by keys records by %s: it cannot change once a checkpoint holds keyed state (the state of a key would be looked for in another key group); set it back, or start this job afresh with a new checkpoint.dir and state.dir",
			errPermanent, rs.id, keyByName(rs.keyBy), keyByName(k))
	}
	if r.stateful {
		keys := transform.DedupKeys(r.specs)
		for _, name := range slices.Sorted(maps.Keys(keys)) {
			if was, ok := rs.dedupKeys[name]; ok && was != keys[name] {
				return nil, fmt.Errorf("%w: checkpoint %d holds the state of dedup %s, which remembers values of field %s, but its key is now %s: the old field's values would be taken for the new one's, and records dropped; set its key back, or give the dedup a new name (transforms[].name) to start its memory afresh",
					errPermanent, rs.id, name, was, keys[name])
			}
		}
	}
	if md != nil {
		log.Info().Uint64("checkpoint", uint64(md.ID)).Msg("restoring from checkpoint")
	} else {
		r.positions = nil // the source starts from its own fallback
		log.Info().Msg("no completed checkpoint: starting from the source's own position (Kafka: the group's offsets or source.start_offset)")
	}
	return r, nil
}

// openSink builds the sink and decides whether the checkpoint found may
// be restored (fallback.go).
func (a *attempt) openSink(ctx context.Context, r *restoredJob) (sink.Sink, error) {
	snk, err := sink.New(a.j.cfg.Sink, sink.Env{Job: a.j.cfg, FS: a.j.fs, Log: a.j.log, Stdout: a.j.stdout, KafkaHooks: a.j.metrics.kafka.Hooks, Reached: &a.j.sinkReached})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPermanent, err)
	}
	a.defer_(func() { _ = snk.Close() })
	if err := a.checkFallback(ctx, r, snk); err != nil {
		return nil, err
	}
	return snk, nil
}

// recoverSink is step 2: commit the restored checkpoint's output again
// (idempotent) and remove everything that belongs to no completed
// checkpoint. It runs on a goroutine of its own (restore), and so touches
// nothing of r but reading its committables, and sets r.sink only once
// done.
func (a *attempt) recoverSink(ctx context.Context, r *restoredJob, snk sink.Sink) error {
	done := warnWhileSlow(a.j.log.With().Int("committables", len(r.committables)).Logger(), slowCallWarning,
		"sink recovery (committing the restored checkpoint's output again)")
	err := snk.Recover(ctx, r.committables)
	done()
	if err != nil {
		return fmt.Errorf("recover sink: %w", err)
	}
	r.sink = snk
	return nil
}

// restoreState is step 3: drop snapshots no checkpoint references, restore
// each worker's keyed state, and drop the state of dedups the job no longer
// has (transform.DropDedupState).
func (a *attempt) restoreState(r *restoredJob) error {
	cfg, log := a.j.cfg, a.j.log
	if deleted, err := r.store.CleanStateRoot(); err != nil {
		log.Warn().Err(err).Msg("cannot delete state files no checkpoint references; they stay until the next start")
	} else if len(deleted) > 0 {
		log.Info().Int("files", len(deleted)).Msg("deleted state files no checkpoint references")
	}
	workers := 0 // a job without keyed state opens no working directory
	if r.stateful {
		workers = cfg.Pipeline.Parallelism
	}
	if removed, err := r.store.RemoveWorkDirsFrom(workers); err != nil {
		log.Warn().Err(err).Msg("cannot remove the working directories of workers the job no longer has; they stay until the next start")
	} else if len(removed) > 0 {
		log.Info().Strs("removed", removed).Msg("removed the working directories of workers the job no longer has")
	}
	r.stores = make([]*state.Store, cfg.Pipeline.Parallelism)
	if !r.stateful {
		return nil
	}
	m, p := cfg.Pipeline.MaxParallelism, cfg.Pipeline.Parallelism
	var dropped []string // dedups whose state is dropped
	for w := range r.stores {
		kg := keygroup.RangeOf(m, p, w)
		sc := state.Config{Dir: r.states.abs(store.WorkDir(w)), MaxParallelism: m, KeyGroups: kg,
			FullSnapshotAfter: int64(cfg.State.FullSnapshotAfter), FS: a.j.fs, Release: r.store.Release}
		var from []string
		for _, c := range r.state {
			if c.keyGroups.Intersect(kg).Empty() {
				continue
			}
			chain := state.Chain{Base: r.states.abs(c.base)}
			for _, l := range c.changelogs {
				chain.Changelogs = append(chain.Changelogs, r.states.abs(l))
			}
			sc.Restore = append(sc.Restore, state.Restore{Chain: chain, KeyGroups: c.keyGroups})
			from = append(from, fmt.Sprintf("worker-%d%s", c.worker, c.keyGroups))
		}
		s, err := state.Open(sc, log.With().Int("worker", w).Logger())
		if errors.Is(err, state.ErrIncompatible) {
			return fmt.Errorf("%w: restore state of worker %d: %w", errPermanent, w, err)
		}
		if err != nil {
			return fmt.Errorf("restore state of worker %d: %w", w, err)
		}
		if len(sc.Restore) == 1 && sc.Restore[0].KeyGroups == kg {
			c := sc.Restore[0].Chain
			base, _ := r.states.rel(c.Base)
			log.Info().Int("worker", w).Str("key_groups", kg.String()).Str("full", base).Int("changelogs", len(c.Changelogs)).Msg("state restored")
		} else if len(sc.Restore) > 0 {
			log.Info().Int("worker", w).Str("key_groups", kg.String()).Strs("from", from).Msg("state restored and rescaled")
		}
		a.defer_(func() { _ = s.Close() })
		r.stores[w] = s
		names, err := transform.DropDedupState(s, transform.DedupKeys(r.specs))
		if err != nil {
			return fmt.Errorf("restore state of worker %d: %w", w, err)
		}
		dropped = append(dropped, names...)
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		log.Info().Strs("dedups", slices.Compact(dropped)).Msg("dropped the state of dedups the job no longer has (renamed or removed): a dedup given one of these names again starts with no memory")
	}
	return nil
}

// openSource is step 4: open the source at the restored positions. It
// retries while the input is unreachable (the job is not ready meanwhile),
// until ctx ends or stop is closed.
func (a *attempt) openSource(ctx context.Context, stop <-chan struct{}, r *restoredJob) error {
	j, cfg := a.j, a.j.cfg
	octx, cancel := untilStop(ctx, stop)
	defer cancel()
	src, err := source.Open(octx, cfg.Source, source.Env{
		Job: cfg, Readers: cfg.Pipeline.Parallelism, Restored: r.positions, DiscoverEvery: j.discoverEvery, Log: j.log,
		KafkaHooks: j.metrics.kafka.Hooks, Slot: j.slot,
	})
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	a.defer_(src.Close)
	r.source = src
	if r.md != nil {
		j.log.Info().Uint64("checkpoint", uint64(r.md.ID)).Str("positions", src.Describe(r.positions)).Msg("source positioned at the checkpoint")
	}
	return nil
}

// commitRestoredPositions commits the restored checkpoint's positions to
// the source (the Kafka group's offsets), once the sink has recovered: it
// repairs a crash between persisting the checkpoint and committing its
// positions, in the order notify keeps (the sink's output, then the
// positions).
func (a *attempt) commitRestoredPositions(ctx context.Context, r *restoredJob) {
	if r.md == nil {
		return
	}
	if err := r.source.Commit(ctx, r.positions); err != nil {
		a.j.log.Warn().Err(err).Msg("re-committing the restored checkpoint's positions failed")
	}
}

// isCancel says whether err is a context's end, not a failure of its own.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// deadLettersExactlyOnce says whether the job's dead letters go through
// transactions (deadletter_txn.go): policy dead_letter in exactly_once
// mode. In at_least_once mode the idempotent producer sends them.
func deadLettersExactlyOnce(cfg *config.Job) bool {
	return cfg.Pipeline.OnDecodeError.Policy == config.DecodeDeadLetter && cfg.Checkpoint.Mode == checkpoint.ExactlyOnce
}

// openDeadLetterSink makes the dead-letter topic's transactional sink, to
// be recovered in step 2 beside the job's sink: with exactly_once dead
// letters, and also when the restored checkpoint names dead-letter
// transactions while the job now runs at_least_once (they are committed
// all the same). nil when neither.
func (a *attempt) openDeadLetterSink(r *restoredJob) (sink.Sink, error) {
	cfg := a.j.cfg
	odc := cfg.Pipeline.OnDecodeError
	switch {
	case odc.Policy == config.DecodeDeadLetter && (deadLettersExactlyOnce(cfg) || len(r.deadLetters) > 0):
		return a.newDeadLetterSink()
	case len(r.deadLetters) > 0:
		// The topic is no longer configured: the transactions cannot be
		// looked for. Only those of a crash right after the checkpoint
		// completed are not committed yet.
		a.j.log.Warn().Uint64("checkpoint", uint64(r.id)).Int("committables", len(r.deadLetters)).
			Msg("the checkpoint names dead-letter transactions, but pipeline.on_decode_error.policy is no longer dead_letter: any of them not committed yet (a crash right after the checkpoint completed) stays uncommitted; set the policy and topic back to commit them")
	}
	return nil, nil
}

// openDeadLetter is step 5: the bad-record policy, with the dead-letter
// writers' sink (exactly_once, recovered in step 2: dls) or the
// idempotent producer (at_least_once), and the largest record the
// dead-letter topic takes.
func (a *attempt) openDeadLetter(ctx context.Context, r *restoredJob, dls sink.Sink) error {
	cfg := a.j.cfg
	r.bad = &badRecords{policy: cfg.Pipeline.OnDecodeError.Policy, topic: cfg.Pipeline.OnDecodeError.Topic, metrics: a.j.metrics, log: a.j.log,
		skipped: logBurst{msg: msgSkipped}, cut: logBurst{msg: msgCut}}
	if r.bad.policy != config.DecodeDeadLetter {
		return nil
	}
	opts := append(kafkaclient.Opts(cfg.Kafka, a.j.log), kgo.WithHooks(a.j.metrics.kafka.Hooks("dead-letter")...))
	if deadLettersExactlyOnce(cfg) {
		// The transactional writers take records up to the topic's
		// max.message.bytes and their producer's batch limit (the Kafka
		// sink's): dead letters are cut to fit both.
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("dead-letter topic: %w", err)
		}
		r.bad.limit = min(deadLetterLimit(ctx, cl, r.bad.topic, a.j.log), kafkaclient.DefaultMaxBatchBytes)
		cl.Close()
		r.deadLetterSink = dls
		return nil
	}
	dlq, limit, err := dialDeadLetter(ctx, r.bad.topic, opts, a.j.log)
	if err != nil {
		return fmt.Errorf("dead-letter producer: %w", err)
	}
	a.defer_(dlq.Close)
	r.bad.dlq, r.bad.limit = dlq, limit
	return nil
}
