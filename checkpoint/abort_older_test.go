package checkpoint

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// abortDriver is a tiny deterministic driver for these tests: a
// Coordinator plus the Aligner of one two-channel worker, with the
// Coordinator's Abort actions forwarded to the aligner as the pipeline's
// driver does (driver.abort -> worker.abort -> Aligner.Abort).
type abortDriver struct {
	t      *testing.T
	c      *Coordinator
	al     *Aligner[string]
	alTask TaskID
	now    time.Time
	log    []string
}

func (d *abortDriver) step(ev Event) {
	d.t.Helper()
	if err := d.c.Step(ev); err != nil {
		d.t.Fatalf("step %T: %v", ev, err)
	}
	queue := d.c.Actions()
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		d.log = append(d.log, a.String())
		switch a := a.(type) {
		case PersistMetadata:
			if err := d.c.Step(MetadataPersisted{ID: a.Metadata.ID}); err != nil {
				d.t.Fatalf("persisted: %v", err)
			}
			queue = append(queue, d.c.Actions()...)
		case Abort:
			d.performAligner(d.al.Abort(d.now, a.ID))
			queue = append(queue, d.c.Actions()...)
		}
	}
}

// performAligner performs a worker's outputs: acks a snapshot, declines a
// cancelled checkpoint (as pipeline/worker.go perform does).
func (d *abortDriver) performAligner(outs []Output[string]) {
	d.t.Helper()
	// copy: the slice is only valid until the next aligner call
	cp := append([]Output[string](nil), outs...)
	for _, o := range cp {
		switch o.Kind {
		case SnapshotAndForward:
			d.log = append(d.log, fmt.Sprintf("%s snapshot %d", d.alTask, o.Barrier.ID))
			if err := d.c.Step(Ack{Task: d.alTask, ID: o.Barrier.ID}); err != nil {
				d.t.Fatalf("ack: %v", err)
			}
		case CancelAndForward:
			d.log = append(d.log, fmt.Sprintf("%s cancel %d: %v", d.alTask, o.Barrier.ID, o.Reason))
			if err := d.c.Step(Decline{Task: d.alTask, ID: o.Barrier.ID, Reason: o.Reason}); err != nil {
				d.t.Fatalf("decline: %v", err)
			}
		}
	}
}

func (d *abortDriver) process(ch int, el Element[string]) {
	d.t.Helper()
	outs, err := d.al.Process(d.now, ch, el)
	if err != nil {
		d.t.Fatal(err)
	}
	d.performAligner(outs)
	// actions caused by the acks/declines
	d.step(Tick{Now: d.now})
}

// newAbortDriver is an abortDriver over a Coordinator of two sources and
// two workers (interval 1s, no initial delay, max_concurrent 2, timeout
// 1m, tolerable failures as given) and worker-0's two-channel Aligner in
// mode.
func newAbortDriver(t *testing.T, mode Mode, tolerable int) (*abortDriver, *Coordinator, *Aligner[string]) {
	t.Helper()
	s := DefaultSettings()
	s.Interval, s.InitialDelay, s.MaxConcurrent, s.Timeout, s.TolerableFailures = time.Second, 0, 2, time.Minute, tolerable
	c, err := NewCoordinator(s, []TaskID{"source-0", "source-1", "worker-0", "worker-1"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	al, err := NewAligner[string](AlignerSettings{Channels: 2, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return &abortDriver{t: t, c: c, al: al, alTask: "worker-0", now: t0}, c, al
}

// TestCoordinatorAbortOfANewerCheckpointSparesAnOlderAlignment: with
// max_concurrent 2, checkpoint 2 is declined by worker-1 while worker-0 is
// still aligning checkpoint 1 (barrier 1 arrived on channel 0, not yet on
// channel 1). The Coordinator's Abort(2), forwarded out of band to worker-0's
// aligner, gave up checkpoint 1 too (as "subsumed"), although nothing was
// wrong with it: barrier 1 then arrived on channel 1 and was ignored, and
// checkpoint 1, which every task could acknowledge, never completed.
func TestCoordinatorAbortOfANewerCheckpointSparesAnOlderAlignment(t *testing.T) {
	d, c, _ := newAbortDriver(t, ExactlyOnce, DefaultSettings().TolerableFailures)
	d.step(Tick{Now: t0}) // trigger 1
	d.now = t0.Add(time.Second)
	d.step(Tick{Now: d.now}) // trigger 2
	for _, id := range []ID{1, 2} {
		d.step(Ack{Task: "source-0", ID: id})
		d.step(Ack{Task: "source-1", ID: id})
	}
	// worker-0: barrier 1 arrives on channel 0 first (channel 1 is slower).
	d.process(0, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: 1}})
	// worker-1 snapshots 1 fine, then cannot pre-commit 2.
	d.step(Ack{Task: "worker-1", ID: 1})
	d.step(Decline{Task: "worker-1", ID: 2, Reason: errors.New("sink pre-commit failed")})
	// Now channel 1 of worker-0 delivers its record and barrier 1.
	d.process(1, Element[string]{Kind: RecordElement, Record: "r"})
	d.process(1, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: 1}})

	if st := c.Status(); st.LastCompleted != 1 {
		t.Errorf("checkpoint 1 (every barrier arrived, every other task acked) did not complete: status %+v\ntrace:\n%s",
			st, joinLines(d.log))
	}
}

// TestCoordinatorAbortBeforeAnyOlderBarrierSparesTheOlder: the abort of
// checkpoint 2 reaches worker-0 before any barrier of checkpoint 1 does
// (the driver serves aborts at once; the barriers queue behind records).
// Giving 2 up there at once raised the floor to 2: barrier 1, arriving
// next, was ignored as stale, and checkpoint 1 timed out.
func TestCoordinatorAbortBeforeAnyOlderBarrierSparesTheOlder(t *testing.T) {
	for _, mode := range []Mode{ExactlyOnce, AtLeastOnce} {
		d, c, al := newAbortDriver(t, mode, DefaultSettings().TolerableFailures)
		d.step(Tick{Now: t0}) // trigger 1
		d.now = t0.Add(time.Second)
		d.step(Tick{Now: d.now}) // trigger 2
		for _, id := range []ID{1, 2} {
			d.step(Ack{Task: "source-0", ID: id})
			d.step(Ack{Task: "source-1", ID: id})
		}
		d.step(Ack{Task: "worker-1", ID: 1})
		d.step(Decline{Task: "worker-1", ID: 2, Reason: errors.New("sink pre-commit failed")})
		// Only now do worker-0's barriers come: 1 on both channels, then 2.
		for ch := range 2 {
			d.process(ch, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: 1}})
		}
		for ch := range 2 {
			d.process(ch, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: 2}})
		}
		if st := c.Status(); st.LastCompleted != 1 {
			t.Errorf("%v: checkpoint 1 (every barrier arrived, every other task acked) did not complete: status %+v\ntrace:\n%s",
				mode, st, joinLines(d.log))
		}
		if got := al.Aligning(); len(got) != 0 {
			t.Errorf("%v: aligning %v at the end, want nothing (2's barriers given up or ignored)", mode, got)
		}
	}
}

func joinLines(l []string) string {
	s := ""
	for _, x := range l {
		s += "  " + x + "\n"
	}
	return s
}

// TestCoordinatorAbortsOfNewerCheckpointsDoNotFailTheJob: the
// consequence of the above under tolerable_failures=1: every second
// checkpoint is declined by worker-1 (a flaky pre-commit), the others are
// healthy but slow to align at worker-0. Each Abort(even) kills the healthy
// odd checkpoint still aligning, so no checkpoint ever completes, the failure
// count is never reset, and the job is failed, although half of the
// checkpoints could have completed (and reset the count).
func TestCoordinatorAbortsOfNewerCheckpointsDoNotFailTheJob(t *testing.T) {
	d, c, _ := newAbortDriver(t, ExactlyOnce, 1)
	d.step(Tick{Now: t0})
	for round := 0; round < 2; round++ {
		odd, even := ID(2*round+1), ID(2*round+2)
		d.now = d.now.Add(time.Second)
		d.step(Tick{Now: d.now}) // triggers even (odd was triggered before)
		for _, id := range []ID{odd, even} {
			d.step(Ack{Task: "source-0", ID: id})
			d.step(Ack{Task: "source-1", ID: id})
		}
		d.process(0, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: odd}})
		d.step(Ack{Task: "worker-1", ID: odd})
		d.step(Decline{Task: "worker-1", ID: even, Reason: errors.New("flaky pre-commit")})
		d.process(1, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: odd}})
		d.process(0, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: even}})
		d.process(1, Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: even}})
		d.now = d.now.Add(time.Second)
		d.step(Tick{Now: d.now}) // triggers the next odd one
	}
	if st := c.Status(); st.Failed != nil || st.LastCompleted == 0 {
		t.Errorf("healthy checkpoints 1 and 3 never completed and the job was failed: status %+v\ntrace:\n%s", st, joinLines(d.log))
	}
}
