package checkpoint

import (
	"fmt"
	"slices"
	"time"
)

// Coordinator decides when checkpoints start, when they complete and when they
// fail. It is a pure state machine: the driver feeds it events with Step and
// performs the actions it takes from Actions, in order. It starts no
// goroutine, reads no clock and does no I/O.
//
// A Coordinator is not safe for concurrent use: one goroutine (the driver's
// loop) owns it.
type Coordinator struct {
	s       Settings
	tasks   []TaskID // sorted
	taskSet map[TaskID]struct{}

	nextID  ID
	last    *Metadata  // last completed checkpoint, nil if none
	pending []*pending // ascending by id
	// persisting is the pending checkpoint whose PersistMetadata is
	// outstanding, nil if none. At most one is.
	persisting *pending

	started        bool
	now            time.Time // time of the latest Tick
	nextDue        time.Time
	completed      bool      // a checkpoint completed since construction
	lastCompletion time.Time // tick time at which it did

	forced   bool  // TriggerNow asked for a checkpoint not yet triggered
	failures int   // consecutive failed checkpoints
	failed   error // set once FailJob was handed out

	actions []Action
}

type pending struct {
	id        ID
	triggered time.Time
	acks      map[TaskID]Ack
	ready     bool // every task acknowledged; waiting for or in persist
}

// metadata returns the checkpoint's metadata, built from every ack; its maps
// and slices are its own.
func (p *pending) metadata() Metadata {
	md := Metadata{ID: p.id, Timestamp: p.triggered, Tasks: make(map[TaskID]Snapshot, len(p.acks))}
	for t, a := range p.acks {
		md.Tasks[t] = Snapshot{Data: slices.Clone(a.Snapshot.Data), Files: slices.Clone(a.Snapshot.Files)}
	}
	return md
}

// NewCoordinator returns a Coordinator for a job whose tasks are tasks (every
// one of them must acknowledge a checkpoint for it to complete). last is the
// newest completed checkpoint the store loaded, nil if none; maxSeen is the
// highest checkpoint id found on disk, complete or not. The first id handed
// out is above both, so ids strictly increase across restarts.
//
// It validates s and returns an error wrapping ErrInvalidSettings if s or
// tasks are unusable.
func NewCoordinator(s Settings, tasks []TaskID, last *Metadata, maxSeen ID) (*Coordinator, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%w: no tasks", ErrInvalidSettings)
	}
	c := &Coordinator{
		s:       s,
		tasks:   slices.Clone(tasks),
		taskSet: make(map[TaskID]struct{}, len(tasks)),
		last:    last,
		nextID:  maxSeen + 1,
	}
	slices.Sort(c.tasks)
	for _, t := range c.tasks {
		if t == "" {
			return nil, fmt.Errorf("%w: empty task id", ErrInvalidSettings)
		}
		if _, dup := c.taskSet[t]; dup {
			return nil, fmt.Errorf("%w: task %q listed twice", ErrInvalidSettings, t)
		}
		c.taskSet[t] = struct{}{}
	}
	if last != nil && last.ID >= c.nextID {
		c.nextID = last.ID + 1
	}
	return c, nil
}

// Step feeds one event. The actions it causes are appended to those Actions
// returns. An error (class ErrBadEvent) means the event could not have happened
// and was ignored: it is a bug in the driver. After FailJob every event is
// ignored and Step returns nil.
func (c *Coordinator) Step(ev Event) error {
	if c.failed != nil {
		return nil
	}
	switch ev := ev.(type) {
	case Tick:
		return c.tick(ev.Now)
	case TriggerNow:
		c.forced = true
		if c.started {
			if ev.Now.After(c.now) {
				c.now = ev.Now
			}
			c.maybeTrigger()
		}
	case Ack:
		if err := c.checkTaskAndID(ev.Task, ev.ID, "ack"); err != nil {
			return err
		}
		c.ack(ev)
	case Decline:
		if err := c.checkTaskAndID(ev.Task, ev.ID, "decline"); err != nil {
			return err
		}
		c.decline(ev)
	case MetadataPersisted:
		p, err := c.checkPersisting(ev.ID, "metadata persisted")
		if err != nil {
			return err
		}
		c.complete(p)
	case MetadataPersistFailed:
		p, err := c.checkPersisting(ev.ID, "metadata persist failed")
		if err != nil {
			return err
		}
		c.persisting = nil
		c.end(p, fmt.Errorf("checkpoint %d: %w: %w", p.id, ErrPersistFailed, ev.Err), false)
		if c.failed == nil {
			c.maybePersist()
		}
	case TaskFailed:
		if _, ok := c.taskSet[ev.Task]; !ok {
			return fmt.Errorf("%w: task failed: unknown task %q", ErrBadEvent, ev.Task)
		}
		c.failJob(fmt.Errorf("task %s: %w: %w", ev.Task, ErrTaskFailed, ev.Err))
	default:
		return fmt.Errorf("%w: unknown event %T", ErrBadEvent, ev)
	}
	return nil
}

// Actions returns the actions caused since the last call, in the order they
// must be performed, and forgets them. The slice is the caller's.
func (c *Coordinator) Actions() []Action {
	a := c.actions
	c.actions = nil
	return a
}

// Mode returns Settings.Mode, for the aligners.
func (c *Coordinator) Mode() Mode { return c.s.Mode }

// Settings returns the settings the Coordinator was made with.
func (c *Coordinator) Settings() Settings { return c.s }

// LastCompleted returns the newest completed checkpoint (restored or completed
// since), nil if none. The caller must not modify it.
func (c *Coordinator) LastCompleted() *Metadata { return c.last }

// Status is a summary of the Coordinator's state, for logs and /api/checkpoints.
type Status struct {
	Pending             []ID // ascending, including the one being persisted
	Persisting          ID   // 0 if none
	LastCompleted       ID   // 0 if none
	NextID              ID
	ConsecutiveFailures int
	Failed              error // the FailJob reason, nil while the job runs
}

// Status returns a summary of the Coordinator's state.
func (c *Coordinator) Status() Status {
	st := Status{NextID: c.nextID, ConsecutiveFailures: c.failures, Failed: c.failed}
	for _, p := range c.pending {
		st.Pending = append(st.Pending, p.id)
	}
	if c.persisting != nil {
		st.Persisting = c.persisting.id
	}
	if c.last != nil {
		st.LastCompleted = c.last.ID
	}
	return st
}

func (c *Coordinator) emit(a Action) { c.actions = append(c.actions, a) }

func (c *Coordinator) checkTaskAndID(t TaskID, id ID, what string) error {
	if _, ok := c.taskSet[t]; !ok {
		return fmt.Errorf("%w: %s for checkpoint %d from unknown task %q", ErrBadEvent, what, id, t)
	}
	if id == 0 || id >= c.nextID {
		return fmt.Errorf("%w: %s from task %s for checkpoint %d, never triggered", ErrBadEvent, what, t, id)
	}
	return nil
}

func (c *Coordinator) checkPersisting(id ID, what string) (*pending, error) {
	if c.persisting == nil || c.persisting.id != id {
		return nil, fmt.Errorf("%w: %s for checkpoint %d, which is not being persisted", ErrBadEvent, what, id)
	}
	return c.persisting, nil
}

func (c *Coordinator) find(id ID) *pending {
	for _, p := range c.pending {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (c *Coordinator) remove(p *pending) {
	c.pending = slices.DeleteFunc(c.pending, func(q *pending) bool { return q == p })
}

func (c *Coordinator) tick(now time.Time) error {
	if c.started && now.Before(c.now) {
		return fmt.Errorf("%w: tick at %v is before the previous tick at %v", ErrBadEvent, now, c.now)
	}
	c.now = now
	if !c.started {
		c.started = true
		r := 0.0
		if c.s.Rand != nil {
			r = c.s.Rand()
		}
		c.nextDue = now.Add(time.Duration(r * float64(c.s.InitialDelay)))
	}
	c.expire()
	if c.failed == nil {
		c.maybeTrigger()
	}
	return nil
}

// expire aborts every pending checkpoint older than Timeout that still waits for
// acks. Checkpoints every task acknowledged do not expire: their fate is the
// persist's.
func (c *Coordinator) expire() {
	for _, p := range slices.Clone(c.pending) {
		if p.ready || c.now.Before(p.triggered.Add(c.s.Timeout)) {
			continue
		}
		c.fail(p, fmt.Errorf("checkpoint %d: %w after %v", p.id, ErrExpired, c.s.Timeout))
		if c.failed != nil {
			return
		}
	}
}

func (c *Coordinator) maybeTrigger() {
	switch {
	case !c.forced && c.now.Before(c.nextDue):
	case len(c.pending) >= c.s.MaxConcurrent:
	case !c.forced && c.completed && c.now.Before(c.lastCompletion.Add(c.s.MinPause)):
	default:
		c.forced = false
		p := &pending{id: c.nextID, triggered: c.now, acks: make(map[TaskID]Ack, len(c.tasks))}
		c.nextID++
		c.pending = append(c.pending, p)
		c.nextDue = c.now.Add(c.s.Interval)
		c.emit(TriggerSources{ID: p.id, Timestamp: p.triggered})
	}
}

func (c *Coordinator) ack(a Ack) {
	p := c.find(a.ID)
	if p == nil {
		// A late ack for a checkpoint that ended: its files are garbage
		// unless a retained checkpoint shares them, which the store checks.
		c.discard(a.ID, a.Snapshot.Files)
		return
	}
	if _, dup := p.acks[a.Task]; dup || p.ready {
		return
	}
	p.acks[a.Task] = a
	if len(p.acks) == len(c.tasks) {
		p.ready = true
		c.maybePersist()
	}
}

func (c *Coordinator) decline(d Decline) {
	p := c.find(d.ID)
	if p == nil || p.ready {
		return // already ended, or acknowledged by every task
	}
	reason := fmt.Errorf("checkpoint %d: task %s %w", d.ID, d.Task, ErrDeclined)
	if d.Reason != nil {
		reason = fmt.Errorf("checkpoint %d: task %s %w: %w", d.ID, d.Task, ErrDeclined, d.Reason)
	}
	c.fail(p, reason)
}

// maybePersist starts persisting the newest fully acknowledged checkpoint if no
// persist is outstanding. Persists are serialised so that completions, and so
// notifications and offset commits, only ever move forward.
func (c *Coordinator) maybePersist() {
	if c.persisting != nil {
		return
	}
	for i := len(c.pending) - 1; i >= 0; i-- {
		p := c.pending[i]
		if !p.ready {
			continue
		}
		c.persisting = p
		c.emit(PersistMetadata{Metadata: p.metadata()})
		return
	}
}

func (c *Coordinator) complete(p *pending) {
	c.persisting = nil
	c.remove(p)
	md := p.metadata()
	var totals Metrics
	for _, a := range p.acks {
		totals.Bytes += a.Metrics.Bytes
		totals.Sync = max(totals.Sync, a.Metrics.Sync)
		totals.Async = max(totals.Async, a.Metrics.Async)
		totals.Alignment = max(totals.Alignment, a.Metrics.Alignment)
		totals.StartDelay = max(totals.StartDelay, a.Metrics.StartDelay)
	}
	c.last = &md
	c.failures = 0
	c.completed = true
	c.lastCompletion = c.now
	c.emit(NotifyComplete{ID: p.id, Timestamp: p.triggered, Totals: totals})
	for _, q := range slices.Clone(c.pending) {
		if q.id < p.id {
			c.fail(q, fmt.Errorf("checkpoint %d: %w by %d", q.id, ErrSubsumed, p.id))
		}
	}
	c.maybePersist()
}

// fail ends pending checkpoint p for reason and discards its files.
func (c *Coordinator) fail(p *pending, reason error) { c.end(p, reason, true) }

// end ends pending checkpoint p for reason: Abort, then (if discard) Discard of
// the files its acks referenced, then FailJob if too many failed in a row. A
// checkpoint whose metadata persist failed is not discarded: its metadata may
// have reached the disk despite the error, and restart recovery sweeps what no
// completed checkpoint references.
func (c *Coordinator) end(p *pending, reason error, discard bool) {
	c.remove(p)
	c.emit(Abort{ID: p.id, Reason: reason})
	if discard {
		var files []string
		for _, a := range p.acks {
			files = append(files, a.Snapshot.Files...)
		}
		c.discard(p.id, files)
	}
	if !countsAsFailure(reason) {
		return
	}
	c.failures++
	if c.failures > c.s.TolerableFailures {
		c.failJob(fmt.Errorf("%w (%d in a row, tolerable %d): %w", ErrTooManyFailures, c.failures, c.s.TolerableFailures, reason))
	}
}

func (c *Coordinator) failJob(reason error) {
	c.failed = reason
	c.pending = nil
	c.persisting = nil
	c.emit(FailJob{Reason: reason})
}

// discard hands out files acknowledged for checkpoint id, which will never
// complete, leaving out those that a pending checkpoint's acks or the last
// completed checkpoint reference (the store leaves out the other retained
// ones).
func (c *Coordinator) discard(id ID, files []string) {
	if len(files) == 0 {
		return
	}
	inUse := make(map[string]bool)
	for _, p := range c.pending {
		for _, a := range p.acks {
			for _, f := range a.Snapshot.Files {
				inUse[f] = true
			}
		}
	}
	if c.last != nil {
		for _, s := range c.last.Tasks {
			for _, f := range s.Files {
				inUse[f] = true
			}
		}
	}
	files = slices.DeleteFunc(slices.Clone(files), func(f string) bool { return inUse[f] })
	slices.Sort(files)
	if files = slices.Compact(files); len(files) > 0 {
		c.emit(Discard{ID: id, Files: files})
	}
}
