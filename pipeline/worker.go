package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/state"
	"github.com/connector-dev/connector/transform"
)

// worker is one parallel instance of the job's processing: it reads its P
// input channels through an Aligner, runs records through the transforms and
// writes them to its sink writer; at a barrier it snapshots its state and
// pre-commits its sink, then acknowledges. One goroutine runs it.
type worker struct {
	index   int
	task    task
	ins     []chan element
	aligner *checkpoint.Aligner[batch]
	chain   *transform.Chain // nil: no transforms
	state   *state.Store     // nil: stateless
	states  *stateFiles
	writer  sink.Writer
	bad     *badRecords
	// deadLetters is the worker's transactional writer of the dead-letter
	// topic (dead letters exactly once: checkpoint.mode exactly_once,
	// deadletter_txn.go); nil otherwise. Pre-committed at every barrier
	// with the sink, its committables ride in the worker's snapshot.
	deadLetters sink.Writer
	events      chan<- checkpoint.Event
	aborts      chan checkpoint.ID // checkpoints the Coordinator aborted
	metrics     *jobMetrics
	log         zerolog.Logger
	// finishing is closed when the sink's asynchronous pre-commit of the
	// last snapshot ended (and the worker acked or declined); nil if none
	// ran. Only the worker's goroutine reads or replaces it.
	finishing chan struct{}
	// finishErr is the task failure the asynchronous part ended with (the
	// sink lost output: sink.ErrLost); written before finishing closes,
	// read by awaitFinish.
	finishErr error
	// spawn runs the asynchronous part of a snapshot: `go f()`, or, in the
	// deterministic harness, f itself at once.
	spawn func(f func())
	// maxParallelism is the job's number of key groups and keyBy what
	// records are keyed by (pipeline.key_by), recorded with the state in
	// every snapshot.
	maxParallelism int
	keyBy          string
	dedupKeys      map[string]string // each dedup's key field, by name, recorded the same way
}

// run reads until ctx is done, a task error occurs, or every input ended.
// It never reads a channel the Aligner blocked, so nothing is held back in
// memory: a blocked channel's records wait in the channel (backpressure).
func (w *worker) run(ctx context.Context) (err error) {
	defer func() { // the writer is closed after run returns
		if ferr := w.awaitFinish(); err == nil {
			err = ferr
		}
	}()
	const firstInput = 3 // cases before the inputs': ctx, aborts, finishing
	cases := make([]reflect.SelectCase, 0, len(w.ins)+firstInput)
	chans := make([]int, 0, len(w.ins)) // case index - firstInput -> channel
	ended := make([]bool, len(w.ins))
	for {
		cases = append(cases[:0],
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.aborts)},
			// A nil channel (no snapshot finishing) is never ready.
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.finishing)})
		chans = chans[:0]
		for ch, in := range w.ins {
			if !ended[ch] && !w.aligner.Blocked(ch) {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in)})
				chans = append(chans, ch)
			}
		}
		chosen, v, ok := reflect.Select(cases)
		var done bool
		var err error
		switch chosen {
		case 0:
			return ctx.Err()
		case 1:
			done, err = w.abortAligning(ctx, v.Interface().(checkpoint.ID))
		case 2:
			// A snapshot's asynchronous part ended: a sink that lost
			// output fails the task now, not at the next barrier.
			err = w.awaitFinish()
		default:
			ch := chans[chosen-firstInput]
			el := element{Kind: checkpoint.EndOfChannel}
			if ok {
				el = v.Interface().(element)
			}
			if el.Kind == checkpoint.EndOfChannel {
				ended[ch] = true
			}
			done, err = w.deliver(ctx, ch, el)
		}
		if err != nil || done {
			return err
		}
	}
}

// deliver hands one element of input channel ch to the aligner and performs
// what comes out; done means every input ended. It is the worker's step:
// run calls it for every element it reads, the deterministic harness
// directly.
func (w *worker) deliver(ctx context.Context, ch int, el element) (done bool, err error) {
	outs, err := w.aligner.Process(time.Now(), ch, el)
	if err != nil {
		return false, fmt.Errorf("%s: aligner: %w", w.task, err)
	}
	return w.performAll(ctx, outs)
}

// abortAligning gives up aligning checkpoint id (the Coordinator aborted it).
func (w *worker) abortAligning(ctx context.Context, id checkpoint.ID) (done bool, err error) {
	return w.performAll(ctx, w.aligner.Abort(time.Now(), id))
}

func (w *worker) performAll(ctx context.Context, outs []checkpoint.Output[batch]) (done bool, err error) {
	for _, o := range outs {
		if done, err = w.perform(ctx, o); err != nil || done {
			return done, err
		}
	}
	return false, nil
}

func (w *worker) perform(ctx context.Context, o checkpoint.Output[batch]) (done bool, err error) {
	switch o.Kind {
	case checkpoint.ProcessRecord:
		err := w.process(ctx, o.Record)
		record.Release(o.Record) // written (or handled as bad records): nothing keeps the batch
		// A worker with full input channels never blocks, so it would keep
		// its CPU for whole scheduler time slices while a checkpoint's
		// goroutines (the pre-commit's rest, the driver) wait to run:
		// yielding after each batch lets them in (bench/RESULTS.md,
		// "Design measurements").
		runtime.Gosched()
		return false, err
	case checkpoint.SnapshotAndForward:
		return false, w.snapshot(ctx, o.Barrier, o.Alignment)
	case checkpoint.CancelAndForward:
		// The worker is the last task of the graph: there is nothing to
		// forward the marker to.
		return false, sendEvent(ctx, w.events, checkpoint.Decline{Task: w.task.ID(), ID: o.Barrier.ID, Reason: o.Reason})
	case checkpoint.InputEnded:
		return true, nil
	}
	return false, fmt.Errorf("%s: unknown aligner output %d", w.task, o.Kind)
}

// abort asks the worker to give up aligning checkpoint id. It never blocks
// the caller (the driver); if the worker is far behind, the cancellation
// marker the readers send after the barrier does the same later.
func (w *worker) abort(id checkpoint.ID) {
	select {
	case w.aborts <- id:
	default:
	}
}

// process runs one batch through the transforms into the sink writer.
func (w *worker) process(ctx context.Context, b batch) error {
	if bw, ok := w.writer.(sink.Batcher); ok {
		bw.BeginBatch()
	}
	var out uint64
	if w.chain != nil {
		defer w.chain.Publish()
	}
	for i := range b {
		r := &b[i]
		if w.chain != nil && i%transform.PrefetchWindow == 0 {
			w.chain.Prefetch(b[i:min(i+transform.PrefetchWindow, len(b))])
		}
		if w.state != nil {
			if err := w.state.SetKeyGroup(int(r.KeyGroup)); err != nil {
				return fmt.Errorf("%s: %w", w.task, err) // a routing bug: never touch another worker's state
			}
		}
		// The record as it came from Kafka: a bad record meets its policy
		// (a dead letter) so, not as far as the transforms took it.
		key, value := r.Key, r.Value
		if w.chain != nil {
			keep, err := w.chain.Apply(r)
			if err != nil && !errors.Is(err, transform.ErrDecode) {
				return fmt.Errorf("%s: transform: %w", w.task, err) // state I/O: never drop the record
			}
			if err != nil {
				r.Key, r.Value = key, value
				if err := w.bad.handle(ctx, w.deadLetters, r, err); err != nil {
					return fmt.Errorf("%s: %w", w.task, err)
				}
				continue
			}
			if !keep {
				continue
			}
		}
		if err := w.writer.Write(ctx, r); err != nil {
			if errors.Is(err, sink.ErrBadRecord) {
				r.Key, r.Value = key, value
				if err := w.bad.handle(ctx, w.deadLetters, r, err); err != nil {
					return fmt.Errorf("%s: %w", w.task, err)
				}
				continue
			}
			return fmt.Errorf("%s: sink write: %w", w.task, err)
		}
		out++
	}
	w.metrics.recordsOut.Add(float64(out))
	return nil
}

// snapshot takes checkpoint n's snapshot of this worker: keyed state, the
// dead letters flushed (at_least_once) or pre-committed (exactly_once),
// the sink pre-committed. Any failure declines
// the checkpoint and leaves the worker running: the job goes on and a later
// checkpoint carries what this one could not.
//
// The synchronous part only closes off what belongs to n: the sink's
// output up to the barrier (sink.AsyncPreCommitter) and the state changed
// since the last barrier (state.Store.Checkpoint). The worker then goes on
// with the records after the barrier while other goroutines make n's part
// durable and then ack (or decline); the next snapshot, and the end of run,
// wait for them first.
func (w *worker) snapshot(ctx context.Context, b checkpoint.Barrier, al checkpoint.Alignment) error {
	if err := w.awaitFinish(); err != nil {
		return err
	}
	if ie, ok := w.writer.(sink.InputEnder); ok && b.Final {
		ie.EndInput()
	}
	start := time.Now()
	finish, async, err := w.takeSnapshot(ctx, b.ID)
	m := checkpoint.Metrics{Sync: time.Since(start), Alignment: al.Duration, StartDelay: al.StartDelay}
	if err != nil {
		return w.conclude(ctx, b.ID, checkpoint.Snapshot{}, m, err)
	}
	if !async {
		snap, err := finish(&m)
		return w.conclude(ctx, b.ID, snap, m, err)
	}
	done := make(chan struct{})
	w.finishing = done
	w.spawn(func() {
		defer close(done)
		began := time.Now()
		snap, err := finish(&m)
		// Async: how long the rest ran on after the synchronous part.
		m.Async = time.Since(began)
		// conclude fails when the sink lost output (the task must fail:
		// the records of the lost transaction are read again only by a
		// restart) or when the job is stopping (ctx ended: nothing to
		// report).
		if err := w.conclude(ctx, b.ID, snap, m, err); err != nil && ctx.Err() == nil {
			w.finishErr = err
		}
	})
	select {
	case <-done: // it ran at once (the deterministic harness)
		return w.awaitFinish()
	default:
		return nil
	}
}

// awaitFinish waits until the last asynchronous pre-commit has ended and
// returns the task failure it ended with, if any.
func (w *worker) awaitFinish() error {
	if w.finishing == nil {
		return nil
	}
	<-w.finishing
	w.finishing = nil
	err := w.finishErr
	w.finishErr = nil
	return err
}

// conclude acks checkpoint id with snap, or declines it if err is set; a
// fatal error fails the task. A declined checkpoint leaves no state file
// behind that nothing will reference: the state Store removes a changelog
// it failed to write, and one it wrote is in its next snapshots.
func (w *worker) conclude(ctx context.Context, id checkpoint.ID, snap checkpoint.Snapshot, m checkpoint.Metrics, err error) error {
	if errors.Is(err, errFatal) || errors.Is(err, sink.ErrLost) {
		return fmt.Errorf("%s: %w", w.task, err)
	}
	if err != nil {
		w.log.Warn().Err(err).Uint64("checkpoint", uint64(id)).Msg("snapshot failed; declining the checkpoint")
		return sendEvent(ctx, w.events, checkpoint.Decline{Task: w.task.ID(), ID: id, Reason: err})
	}
	crashpoint.Hit(crashpoint.AfterPreCommit)
	return sendEvent(ctx, w.events, checkpoint.Ack{Task: w.task.ID(), ID: id, Snapshot: snap, Metrics: m})
}

// takeSnapshot takes the synchronous part of the snapshot: the sink's
// pre-commit, whose asynchronous rest (see sink.AsyncPreCommitter) starts
// at once on its own goroutine, and the state's (state.Store.Checkpoint).
// finish runs the state's rest, waits for the sink's and returns the
// snapshot to ack; async says whether there is any such rest, for which the
// worker need not wait. finish must be called once, also when it is not
// async.
func (w *worker) takeSnapshot(ctx context.Context, id checkpoint.ID) (finish func(*checkpoint.Metrics) (checkpoint.Snapshot, error), async bool, err error) {
	if err := w.bad.flush(ctx); err != nil {
		return nil, false, err
	}
	// The dead letters' transaction is pre-committed first, at once: a
	// checkpoint without dead letters opened none, and costs nothing. Its
	// failure is sink.ErrLost (the task fails: the restart reads the bad
	// records again); its committables are carried until committed, as
	// the sink's are.
	var dead []sink.Committable
	if w.deadLetters != nil {
		if dead, err = w.deadLetters.PreCommit(ctx, id); err != nil {
			return nil, false, fmt.Errorf("dead-letter pre-commit: %w", err)
		}
	}
	var cs []sink.Committable
	sinkRest := func() error { return nil }
	if apc, ok := w.writer.(sink.AsyncPreCommitter); ok {
		rest, err := apc.PreCommitAsync(ctx, id)
		if err != nil {
			return nil, false, fmt.Errorf("sink pre-commit: %w", err)
		}
		done := make(chan error, 1)
		w.spawn(func() {
			var err error
			cs, err = rest() // read by sinkRest's caller only after done
			done <- err
		})
		sinkRest = func() error { return <-done }
		async = true
	} else if cs, err = w.writer.PreCommit(ctx, id); err != nil {
		return nil, false, fmt.Errorf("sink pre-commit: %w", err)
	}
	var pending *state.Pending
	if w.state != nil {
		if w.chain != nil {
			// What the transforms held back goes into the state first
			// (transform.Flusher); the next record sets its key group.
			if err := w.chain.Flush(); err != nil {
				return nil, false, errors.Join(fmt.Errorf("state snapshot: %w", err), sinkErr(sinkRest()))
			}
		}
		full, changelog := w.states.abs(store.FullSnapshotPath(id, w.index)), w.states.abs(store.ChangelogPath(id, w.index))
		if pending, err = w.state.Checkpoint(full, changelog); err != nil {
			// The writer must get its output back before the next
			// pre-commit: wait for the sink's rest all the same.
			return nil, false, errors.Join(fmt.Errorf("state snapshot: %w", err), sinkErr(sinkRest()))
		}
		async = true
	}
	finish = func(m *checkpoint.Metrics) (snap checkpoint.Snapshot, err error) {
		var data workerData
		if pending != nil {
			c, serr := pending.Wait()
			if err = serr; err == nil {
				err = w.recordChain(c, &data, &snap)
				m.Bytes = c.Bytes
			}
		}
		if err = errors.Join(err, sinkErr(sinkRest())); err != nil {
			return checkpoint.Snapshot{}, err
		}
		data.Committables, data.DeadLetters = cs, dead
		snap.Data, err = data.encode()
		return snap, err
	}
	return finish, async, nil
}

func sinkErr(err error) error {
	if err != nil {
		return fmt.Errorf("sink pre-commit: %w", err)
	}
	return nil
}

// recordChain puts a state snapshot into the worker's data and the
// snapshot's file list, relative to the state root.
func (w *worker) recordChain(c state.Chain, data *workerData, snap *checkpoint.Snapshot) (err error) {
	kg := w.state.KeyGroups()
	data.KeyGroups, data.MaxParallelism, data.KeyBy = &kg, w.maxParallelism, w.keyBy
	if len(w.dedupKeys) > 0 {
		data.DedupKeys = w.dedupKeys
	}
	if data.State, err = w.states.rel(c.Base); err == nil {
		if data.Changelogs, err = w.states.rels(c.Changelogs); err == nil {
			snap.Files, err = w.states.rels(c.Files())
		}
	}
	if err != nil {
		return fmt.Errorf("state snapshot: %w", err)
	}
	return nil
}
