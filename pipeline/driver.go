package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
)

// driver owns the Coordinator and performs its actions, following the
// numbered duties in package checkpoint's doc.go. Only the driver's
// goroutine touches the Coordinator, the store's Save, and the sink's Commit.
type driver struct {
	job       string // its name, in every checkpoint it persists
	coord     *checkpoint.Coordinator
	store     *store.Store
	readers   []source.Reader
	stopAt    *atomic.Uint64 // the final checkpoint, once stopping (the emitters read it)
	sink      sink.Sink
	writers   []sink.Writer
	workers   []*worker
	offsets   *offsetCommitter
	events    chan checkpoint.Event
	metrics   *jobMetrics
	health    *health
	history   *history
	log       zerolog.Logger
	onCommit  func(checkpoint.Metadata, restored) // after a checkpoint is committed; may be nil
	persisted map[checkpoint.ID]persisted
	// deadLetters is the dead-letter topic's transactional sink and
	// deadLetterWriters the workers' writers of it (exactly_once dead
	// letters, deadletter_txn.go); nil without.
	deadLetters       sink.Sink
	deadLetterWriters []sink.Writer
	// commitTimeout bounds one checkpoint's sink commit (commitBound).
	commitTimeout time.Duration
	// slowWarning is how often a commit still running says so; 0 means
	// slowCallWarning.
	slowWarning time.Duration
	discards    []checkpoint.Discard // files of failed checkpoints, until a later one completed
	failed      error                // set by FailJob
	// observe, if set, sees every action just before it is performed (the
	// deterministic harness traces them).
	observe func(checkpoint.Action)
	// clock is the wall clock for health and logs; nil means time.Now.
	clock func() time.Time
	// lastTime is the latest time given to the Coordinator (coordTime).
	lastTime time.Time
}

// persisted is a checkpoint whose metadata is durable, waiting for its
// NotifyComplete, with when its phases ended (for the completion log).
type persisted struct {
	md             checkpoint.Metadata
	acked, durable time.Time // every task acked; metadata durable
}

// errFinalCheckpoint: a stop was asked for and no checkpoint completed in
// time to end the job cleanly.
var errFinalCheckpoint = errors.New("final checkpoint did not complete")

// loop drives the Coordinator until the job fails (returns the reason) or
// stop is closed and a checkpoint triggered after that completed (returns
// nil). tick is the Tick period.
func (d *driver) loop(ctx context.Context, stop <-chan struct{}, tick, finalTimeout time.Duration) error {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	var (
		stopping   bool
		finalAfter checkpoint.ID
		deadline   time.Time
	)
	for {
		ticked := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			stop = nil
			stopping = true
			finalAfter = d.requestStop(ctx)
			deadline = time.Now().Add(finalTimeout)
		case now := <-ticker.C:
			ticked = true
			d.step(ctx, checkpoint.Tick{Now: d.coordTime(now)})
		case ev := <-d.events:
			d.step(ctx, ev)
		}
		if d.failed != nil {
			return d.failed
		}
		if stopping {
			if d.stopped(finalAfter) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w within %s (checkpoint.timeout)", errFinalCheckpoint, finalTimeout)
			}
			if ticked { // at most once a tick: a final checkpoint declined at once does not spin
				d.retryFinal(ctx, finalAfter)
			}
		}
	}
}

// requestStop triggers the final checkpoint (duty 12) and returns the id
// that stopped must see completed. The readers emit no records after its
// barrier: what they read before it is all the run writes.
func (d *driver) requestStop(ctx context.Context) checkpoint.ID {
	finalAfter := d.coord.Status().NextID
	d.log.Info().Uint64("checkpoint", uint64(finalAfter)).Msg("stop requested: taking a final checkpoint")
	if d.stopAt != nil {
		d.stopAt.Store(uint64(finalAfter))
	}
	for _, r := range d.readers {
		r.Suspend(finalAfter)
	}
	d.step(ctx, checkpoint.TriggerNow{Now: d.coordTime(d.now())})
	return finalAfter
}

// retryFinal asks for a checkpoint again when none from finalAfter on is
// pending or completed: the final one failed (a decline, a timeout), and
// the next regular one could be due after the stop's deadline. The
// readers' barriers still flow after their suspension, so it can complete.
func (d *driver) retryFinal(ctx context.Context, finalAfter checkpoint.ID) {
	st := d.coord.Status()
	if st.LastCompleted >= finalAfter || (len(st.Pending) > 0 && st.Pending[len(st.Pending)-1] >= finalAfter) || st.NextID <= finalAfter {
		return
	}
	d.log.Info().Uint64("after", uint64(finalAfter)).Msg("the final checkpoint failed: taking another")
	d.step(ctx, checkpoint.TriggerNow{Now: d.coordTime(d.now())})
}

// coordTime returns t, or the latest time it returned if t is before it:
// the Coordinator's times never go back (a tick already in the ticker's
// channel is older than the stop request's time).
func (d *driver) coordTime(t time.Time) time.Time {
	if t.Before(d.lastTime) {
		return d.lastTime
	}
	d.lastTime = t
	return t
}

// stopped reports whether a checkpoint triggered after the stop request
// (finalAfter or later) completed and was committed.
func (d *driver) stopped(finalAfter checkpoint.ID) bool {
	return d.coord.Status().LastCompleted >= finalAfter
}

// step feeds one event and performs the actions it yields, in order. An
// action whose outcome is an event (persisting metadata, a failed commit)
// feeds that event next, before anything else.
func (d *driver) step(ctx context.Context, ev checkpoint.Event) {
	queue := []checkpoint.Event{ev}
	for len(queue) > 0 {
		ev, queue = queue[0], queue[1:]
		if err := d.coord.Step(ev); err != nil {
			d.log.Error().Err(err).Msg("coordinator rejected an event (a runtime bug)")
		}
		for _, a := range d.coord.Actions() {
			if next := d.perform(ctx, a); next != nil {
				queue = append(queue, next)
			}
		}
	}
}

func (d *driver) perform(ctx context.Context, a checkpoint.Action) checkpoint.Event {
	if d.observe != nil {
		d.observe(a)
	}
	switch a := a.(type) {
	case checkpoint.TriggerSources:
		d.history.triggered(a.ID, a.Timestamp)
		for _, r := range d.readers {
			r.Trigger(a.ID, a.Timestamp)
		}
	case checkpoint.PersistMetadata:
		return d.persist(a.Metadata)
	case checkpoint.NotifyComplete:
		d.complete(ctx, a)
	case checkpoint.Abort:
		d.abort(a)
	case checkpoint.Discard:
		// Not yet: a state file acknowledged for a checkpoint that never
		// completes may start the next checkpoint's chain (see package
		// state, "Snapshots: chains").
		// discard deletes it once a later checkpoint completed without it.
		d.discards = append(d.discards, a)
	case checkpoint.FailJob:
		d.failed = a.Reason
		d.history.endInProgress(d.now(), a.Reason) // they end with the attempt
	}
	return nil
}

func (d *driver) persist(md checkpoint.Metadata) checkpoint.Event {
	md.Job = d.job
	acked := time.Now()
	if err := d.store.Persist(md); err != nil {
		d.log.Warn().Err(err).Uint64("checkpoint", uint64(md.ID)).Msg("checkpoint metadata not persisted; the job goes on")
		return checkpoint.MetadataPersistFailed{ID: md.ID, Err: err}
	}
	crashpoint.Hit(crashpoint.AfterPersist)
	d.persisted[md.ID] = persisted{md: md, acked: acked, durable: time.Now()}
	return checkpoint.MetadataPersisted{ID: md.ID}
}

// complete commits checkpoint n everywhere: the sinks' committables (what
// they pre-committed at n and at earlier failed barriers), then the dead
// letters' transactions, then the source's offsets to the consumer group.
// A commit that fails fails the job (duty 7): the restart commits again
// from the same checkpoint.
func (d *driver) complete(ctx context.Context, a checkpoint.NotifyComplete) {
	p, ok := d.persisted[a.ID]
	md := p.md
	delete(d.persisted, a.ID)
	if !ok {
		d.failed = fmt.Errorf("notified of checkpoint %d that was never persisted (a runtime bug)", a.ID)
		return
	}
	r, err := fromMetadata(&md)
	if err != nil {
		d.failed = err
		return
	}
	commitStart := time.Now()
	if err := d.commit(ctx, a.ID, r.committables); err != nil {
		d.failed = fmt.Errorf("sink commit of checkpoint %d: %w", a.ID, err)
		return
	}
	if err := d.commitDeadLetters(ctx, a.ID, r.deadLetters); err != nil {
		d.failed = fmt.Errorf("dead-letter commit of checkpoint %d: %w", a.ID, err)
		return
	}
	committed := time.Since(commitStart)
	for _, w := range d.writers {
		w.Committed(a.ID)
	}
	for _, w := range d.deadLetterWriters {
		w.Committed(a.ID)
	}
	d.offsets.submit(r.positions)
	now := time.Now()
	took := now.Sub(a.Timestamp)
	d.metrics.completed(a, committed, now)
	d.health.checkpointCompleted()
	// duration = acked (trigger to the last task's ack: barriers, alignment,
	// snapshots, pre-commits) + persist (metadata durable) + commit (the
	// sinks' commit, after the checkpoint became durable) + small gaps.
	d.history.end(a.ID, now, func(c *CheckpointRecord) {
		c.Status, c.DurationMS = statusCompleted, ms(took)
		c.AckedMS, c.PersistMS, c.CommitMS = ms(p.acked.Sub(a.Timestamp)), ms(p.durable.Sub(p.acked)), ms(committed)
		c.SyncMS, c.AsyncMS, c.AlignmentMS = ms(a.Totals.Sync), ms(a.Totals.Async), ms(a.Totals.Alignment)
		c.StartDelayMS = ms(a.Totals.StartDelay)
		c.StateBytes, c.Committables = a.Totals.Bytes, len(r.committables)
	})
	d.log.Info().Uint64("checkpoint", uint64(a.ID)).Dur("duration_ms", took).
		Dur("acked_ms", p.acked.Sub(a.Timestamp)).Dur("persist_ms", p.durable.Sub(p.acked)).Dur("commit_ms", committed).
		Dur("sync_ms", a.Totals.Sync).Dur("async_ms", a.Totals.Async).Dur("alignment_ms", a.Totals.Alignment).
		Dur("start_delay_ms", a.Totals.StartDelay).Int64("state_bytes", a.Totals.Bytes).
		Int("committables", len(r.committables)).Msg("checkpoint completed")
	if d.onCommit != nil {
		d.onCommit(md, r)
	}
	d.store.Collect() // retention, off the checkpoint's critical path
	d.discard(a.ID)
}

// commitBound is how long a checkpoint's sink commit may take before it
// fails the job: checkpoint.timeout, and at least minCommitTimeout. A
// commit is a handful of requests (a transaction's end, a multipart
// upload's completion); one that outlasts this is stuck (a client retrying
// a broker's answer forever, say), and it would hold the driver, and so
// every later checkpoint, without a word. The failure restarts the job,
// whose Recover commits the same committables again (Commit is
// idempotent; duty 7).
func commitBound(checkpointTimeout time.Duration) time.Duration {
	return max(checkpointTimeout, minCommitTimeout)
}

const minCommitTimeout = 30 * time.Second

// commit runs the sink's Commit of checkpoint id under commitTimeout,
// warning while it runs long.
func (d *driver) commit(ctx context.Context, id checkpoint.ID, cs []sink.Committable) error {
	return d.commitTo(ctx, id, d.sink, "sink commit", cs)
}

// commitTo runs snk's Commit of checkpoint id under commitTimeout, warning
// (as what) while it runs long.
func (d *driver) commitTo(ctx context.Context, id checkpoint.ID, snk sink.Sink, what string, cs []sink.Committable) error {
	period := d.slowWarning
	if period <= 0 {
		period = slowCallWarning
	}
	defer warnWhileSlow(d.log.With().Uint64("checkpoint", uint64(id)).Dur("bound_ms", d.commitTimeout).Logger(),
		period, what)()
	if d.commitTimeout <= 0 {
		return snk.Commit(ctx, cs)
	}
	cctx, cancel := context.WithTimeout(ctx, d.commitTimeout)
	defer cancel()
	err := snk.Commit(cctx, cs)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("did not finish within %v (at least checkpoint.timeout): %w", d.commitTimeout, err)
	}
	return err
}

// discard deletes the files of the failed checkpoints before completed,
// except those a checkpoint on disk references (duty 9). Every file a
// worker's later snapshots still need is in completed's snapshot: a file
// that leaves a worker's chain never comes back to it. What cannot be
// deleted now is left to the next start.
func (d *driver) discard(completed checkpoint.ID) {
	var files []string
	keep := d.discards[:0]
	for _, a := range d.discards {
		if a.ID < completed {
			files = append(files, a.Files...)
		} else {
			keep = append(keep, a)
		}
	}
	d.discards = keep
	if len(files) == 0 {
		return
	}
	if err := d.store.Discard(files); err != nil {
		d.log.Warn().Err(err).Msg("cannot delete the state files of failed checkpoints; the next start does")
	}
}

// abort tells the workers to stop aligning the checkpoint (duty 8) and the
// readers to send a cancellation marker after its barrier, for barriers
// still on their way.
func (d *driver) abort(a checkpoint.Abort) {
	for _, w := range d.workers {
		w.abort(a.ID)
	}
	for _, r := range d.readers {
		r.CancelBarrier(a.ID)
	}
	if errors.Is(a.Reason, checkpoint.ErrSubsumed) {
		// Not a failure (no metric, no count, no health): a newer one
		// completed. Its record ends failed, with the reason.
		d.history.endCounted(a.ID, d.now(), func(c *CheckpointRecord) { c.Status, c.Reason = statusFailed, a.Reason.Error() }, false)
		d.log.Debug().Uint64("checkpoint", uint64(a.ID)).Msg("checkpoint subsumed")
		return
	}
	d.metrics.checkpointsFailed.Inc()
	d.health.checkpointFailed(a.Reason, d.now())
	d.history.end(a.ID, d.now(), func(c *CheckpointRecord) { c.Status, c.Reason = statusFailed, a.Reason.Error() })
	d.log.Warn().Uint64("checkpoint", uint64(a.ID)).Err(a.Reason).Msg("checkpoint aborted; its output stays pending for the next one")
}

// now is the driver's wall clock.
func (d *driver) now() time.Time {
	if d.clock != nil {
		return d.clock()
	}
	return time.Now()
}
