package checkpoint

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var (
	seedFlag      = flag.Uint64("seed", 0, "base seed of the randomized tests (0: from the clock); schedule i uses seed+i")
	schedulesFlag = flag.Int("schedules", 5000, "random schedules per randomized test")
)

// baseSeed returns the seed of schedule 0 and logs it.
func baseSeed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("base seed %d", s)
	return s
}

// TestCoordinatorRandomSchedulesKeepInvariants drives the Coordinator through
// random interleavings of ticks, acks (in time, late, repeated), declines,
// persist outcomes, task failures, driver bugs and restarts, and checks after
// every step:
//
//   - a checkpoint is persisted only once every task acknowledged it, with
//     exactly the snapshots acknowledged, and one persist at a time;
//   - NotifyComplete(n) only after MetadataPersisted(n) was fed, and
//     completions only move forward;
//   - trigger ids strictly increase, across restarts too;
//   - at most MaxConcurrent checkpoints are pending, a checkpoint still waiting
//     for acks is never older than Timeout after a tick, and triggers respect
//     Interval and MinPause;
//   - every Abort or NotifyComplete ends a pending checkpoint, once; Discard
//     never lists a file that a pending checkpoint's acks or the last
//     completed checkpoint list;
//   - more than TolerableFailures failures in a row fail the job, fewer never
//     do; after FailJob nothing else is handed out;
//   - bad events are rejected with ErrBadEvent and change nothing.
func TestCoordinatorRandomSchedulesKeepInvariants(t *testing.T) {
	base := baseSeed(t)
	n := *schedulesFlag
	for i := range n {
		seed := base + uint64(i)
		if err := runCoordinatorSchedule(seed, 150); err != nil {
			t.Fatalf("schedule seed %d: %v\nreplay: go test ./checkpoint/ -run %s -seed %d -schedules 1", seed, err, t.Name(), seed)
		}
	}
	t.Logf("%d schedules", n)
}

// coordModel is what the test knows from the outside.
type coordModel struct {
	s        Settings
	tasks    []TaskID
	c        *Coordinator
	now      time.Time
	ticked   bool
	maxID    ID                       // highest id ever triggered, across restarts
	pending  map[ID]time.Time         // triggered, not ended -> trigger time
	acked    map[ID]map[TaskID][]byte // first ack sent while pending
	files    map[ID][]string          // files of those acks
	lastMD   Metadata                 // last PersistMetadata handed out
	full     map[ID]bool              // every task acked while pending
	persist  ID                       // outstanding PersistMetadata, 0 if none
	fed      map[ID]bool              // MetadataPersisted fed
	lastDone ID                       // highest completed
	lastMeta *Metadata
	lastTrig time.Time
	doneAt   time.Time // tick time of the last completion since (re)start
	anyDone  bool
	forced   bool // TriggerNow fed, no trigger since
	failures int  // consecutive counted failures
	failed   bool
}

func runCoordinatorSchedule(seed uint64, steps int) error {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	unit := 10 * time.Millisecond
	s := DefaultSettings()
	s.Interval = time.Duration(1+r.IntN(5)) * unit
	s.InitialDelay = time.Duration(r.IntN(5)) * unit
	s.Rand = r.Float64
	s.MinPause = time.Duration(r.IntN(4)) * unit
	s.Timeout = time.Duration(3+r.IntN(20)) * unit
	s.MaxConcurrent = 1 + r.IntN(3)
	s.TolerableFailures = r.IntN(6)
	var tasks []TaskID
	for i := range 1 + r.IntN(4) {
		tasks = append(tasks, TaskID(fmt.Sprintf("t%d", i)))
	}
	m := &coordModel{s: s, tasks: tasks, now: t0}
	if err := m.restart(r); err != nil {
		return err
	}
	for step := range steps {
		if err := m.step(r); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
	}
	return nil
}

func (m *coordModel) restart(r *rand.Rand) error {
	maxSeen := m.maxID + ID(r.IntN(3))
	c, err := NewCoordinator(m.s, m.tasks, m.lastMeta, maxSeen)
	if err != nil {
		return err
	}
	m.c = c
	m.maxID = maxSeen
	if m.lastMeta != nil && m.lastMeta.ID > m.maxID {
		m.maxID = m.lastMeta.ID
	}
	m.ticked = false
	m.forced = false
	m.pending = map[ID]time.Time{}
	m.acked = map[ID]map[TaskID][]byte{}
	m.files = map[ID][]string{}
	m.full = map[ID]bool{}
	m.fed = map[ID]bool{}
	m.persist = 0
	m.anyDone = false
	m.lastTrig = time.Time{}
	m.failures = 0
	m.failed = false
	return nil
}

func (m *coordModel) randomID(r *rand.Rand) ID {
	if len(m.pending) > 0 && r.IntN(4) > 0 {
		ids := make([]ID, 0, len(m.pending))
		for id := range m.pending {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids[r.IntN(len(ids))]
	}
	if m.maxID == 0 {
		return 1
	}
	return 1 + ID(r.IntN(int(m.maxID))) // maybe ended, maybe from before a restart
}

func (m *coordModel) step(r *rand.Rand) error {
	if m.failed && r.IntN(10) == 0 || r.IntN(400) == 0 {
		return m.restart(r)
	}
	var ev Event
	bad := false
	task := m.tasks[r.IntN(len(m.tasks))]
	switch k := r.IntN(100); {
	case k < 30:
		m.now = m.now.Add(time.Duration(r.IntN(4)) * 10 * time.Millisecond)
		ev = Tick{Now: m.now}
	case k < 75:
		if m.maxID == 0 {
			return nil
		}
		id := m.randomID(r)
		data := []byte(fmt.Sprintf("%s/%d/%d", task, id, r.IntN(1000)))
		files := []string{string(data)}
		if r.IntN(3) == 0 {
			files = append(files, fmt.Sprintf("shared/%d", r.IntN(3)))
		}
		ev = Ack{Task: task, ID: id, Snapshot: Snapshot{Data: data, Files: files}}
	case k < 80:
		if m.maxID == 0 {
			return nil
		}
		var reason error
		if r.IntN(3) == 0 {
			reason = ErrSubsumed
		}
		ev = Decline{Task: task, ID: m.randomID(r), Reason: reason}
	case k < 94:
		if m.persist == 0 {
			return nil
		}
		if r.IntN(5) == 0 {
			ev = MetadataPersistFailed{ID: m.persist, Err: errors.New("disk full")}
		} else {
			ev = MetadataPersisted{ID: m.persist}
		}
	case k < 95:
		ev = TriggerNow{}
		if !m.failed {
			m.forced = true
		}
	case k < 96:
		ev = TaskFailed{Task: task, Err: errors.New("boom")}
	default:
		bad = true
		switch r.IntN(4) {
		case 0:
			ev = Ack{Task: "nobody", ID: 1}
		case 1:
			ev = Ack{Task: task, ID: m.maxID + 1 + ID(r.IntN(3))}
		case 2:
			ev = MetadataPersisted{ID: m.maxID + 1}
		default:
			if !m.ticked || m.failed {
				return nil
			}
			ev = Tick{Now: m.now.Add(-time.Millisecond)}
		}
	}
	var before string
	if bad {
		before = fmt.Sprint(m.c.Status())
	}
	err := m.c.Step(ev)
	acts := m.c.Actions()
	if m.failed {
		if err != nil || len(acts) > 0 {
			return fmt.Errorf("after FailJob, %T gave %v %v", ev, err, acts)
		}
		return nil
	}
	if bad {
		if !errors.Is(err, ErrBadEvent) || len(acts) > 0 || fmt.Sprint(m.c.Status()) != before {
			return fmt.Errorf("bad event %#v: err %v, actions %v, status %s -> %v", ev, err, acts, before, m.c.Status())
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%#v: %v", ev, err)
	}
	// Record what the event means before checking the actions it caused.
	switch ev := ev.(type) {
	case Tick:
		m.ticked = true
	case Ack:
		if _, ok := m.pending[ev.ID]; ok && !m.full[ev.ID] {
			if m.acked[ev.ID] == nil {
				m.acked[ev.ID] = map[TaskID][]byte{}
			}
			if _, dup := m.acked[ev.ID][ev.Task]; !dup {
				m.acked[ev.ID][ev.Task] = ev.Snapshot.Data
				m.files[ev.ID] = append(m.files[ev.ID], ev.Snapshot.Files...)
			}
			m.full[ev.ID] = len(m.acked[ev.ID]) == len(m.tasks)
		}
	case MetadataPersisted:
		m.fed[ev.ID] = true
	case MetadataPersistFailed:
		m.persist = 0
	}
	for i, a := range acts {
		if err := m.check(a, ev); err != nil {
			return fmt.Errorf("after %#v, action %d %v: %w (all: %v)", ev, i, a, err, acts)
		}
		if _, ok := a.(FailJob); ok && i != len(acts)-1 {
			return fmt.Errorf("actions after FailJob: %v", acts)
		}
	}
	return m.checkState(ev)
}

func (m *coordModel) check(a Action, ev Event) error {
	switch a := a.(type) {
	case TriggerSources:
		_, tick := ev.(Tick)
		_, now := ev.(TriggerNow)
		if !tick && !now {
			return errors.New("trigger not on a tick or TriggerNow")
		}
		if now && !m.forced {
			return errors.New("TriggerNow triggered without being asked")
		}
		forced := m.forced
		m.forced = false
		if a.ID <= m.maxID {
			return fmt.Errorf("id %d not above %d", a.ID, m.maxID)
		}
		if len(m.pending) >= m.s.MaxConcurrent {
			return fmt.Errorf("trigger with %d pending", len(m.pending))
		}
		if !forced && !m.lastTrig.IsZero() && a.Timestamp.Sub(m.lastTrig) < m.s.Interval {
			return fmt.Errorf("trigger at %v within interval of the previous at %v", a.Timestamp, m.lastTrig)
		}
		if !forced && m.anyDone && a.Timestamp.Before(m.doneAt.Add(m.s.MinPause)) {
			return fmt.Errorf("trigger at %v within min pause of completion at %v", a.Timestamp, m.doneAt)
		}
		m.maxID = a.ID
		m.pending[a.ID] = a.Timestamp
		m.lastTrig = a.Timestamp
	case PersistMetadata:
		id := a.Metadata.ID
		if m.persist != 0 {
			return fmt.Errorf("persist %d while %d outstanding", id, m.persist)
		}
		if _, ok := m.pending[id]; !ok || !m.full[id] {
			return fmt.Errorf("persist %d: pending %v, every task acked %v", id, ok, m.full[id])
		}
		if len(a.Metadata.Tasks) != len(m.tasks) {
			return fmt.Errorf("persist %d with %d tasks", id, len(a.Metadata.Tasks))
		}
		for task, snap := range a.Metadata.Tasks {
			if string(snap.Data) != string(m.acked[id][task]) {
				return fmt.Errorf("persist %d: task %s data %q, acked %q", id, task, snap.Data, m.acked[id][task])
			}
		}
		if a.Metadata.Timestamp != m.pending[id] {
			return fmt.Errorf("persist %d: timestamp %v, triggered %v", id, a.Metadata.Timestamp, m.pending[id])
		}
		m.persist = id
		m.lastMD = a.Metadata
	case NotifyComplete:
		if !m.fed[a.ID] || m.persist != a.ID {
			return fmt.Errorf("notify %d before its metadata persisted", a.ID)
		}
		if a.ID <= m.lastDone {
			return fmt.Errorf("completion %d after %d", a.ID, m.lastDone)
		}
		if _, ok := m.pending[a.ID]; !ok {
			return fmt.Errorf("notify %d not pending", a.ID)
		}
		delete(m.pending, a.ID)
		m.persist = 0
		m.lastDone = a.ID
		md := m.lastMD
		m.lastMeta = &md
		m.failures = 0
		m.anyDone = true
		m.doneAt = m.now
	case Abort:
		if _, ok := m.pending[a.ID]; !ok {
			return fmt.Errorf("abort %d not pending", a.ID)
		}
		if m.persist == a.ID {
			return fmt.Errorf("abort %d while persisting", a.ID)
		}
		if errors.Is(a.Reason, ErrExpired) && m.full[a.ID] {
			return fmt.Errorf("expired %d though every task acked", a.ID)
		}
		if errors.Is(a.Reason, ErrSubsumed) && !errors.Is(a.Reason, ErrDeclined) && a.ID >= m.lastDone {
			return fmt.Errorf("%d subsumed, last completed %d", a.ID, m.lastDone)
		}
		delete(m.pending, a.ID)
		if countsAsFailure(a.Reason) {
			m.failures++
		}
	case Discard:
		if _, ok := m.pending[a.ID]; ok {
			return fmt.Errorf("discard %d still pending", a.ID)
		}
		if len(a.Files) == 0 {
			return errors.New("empty discard")
		}
		inUse := map[string]bool{}
		for id := range m.pending {
			for _, f := range m.files[id] {
				inUse[f] = true
			}
		}
		if m.lastMeta != nil {
			for _, s := range m.lastMeta.Tasks {
				for _, f := range s.Files {
					inUse[f] = true
				}
			}
		}
		for _, f := range a.Files {
			if inUse[f] {
				return fmt.Errorf("discards %s, which a pending or the last completed checkpoint lists", f)
			}
		}
	case FailJob:
		if m.failures <= m.s.TolerableFailures && !errors.Is(a.Reason, ErrTaskFailed) {
			return fmt.Errorf("failed after %d failures, tolerable %d", m.failures, m.s.TolerableFailures)
		}
		m.failed = true
	default:
		return fmt.Errorf("unknown action %T", a)
	}
	return nil
}

func (m *coordModel) checkState(ev Event) error {
	if m.failed {
		return nil
	}
	if m.failures > m.s.TolerableFailures {
		return fmt.Errorf("%d failures in a row, tolerable %d, job not failed", m.failures, m.s.TolerableFailures)
	}
	if len(m.pending) > m.s.MaxConcurrent {
		return fmt.Errorf("%d pending, max %d", len(m.pending), m.s.MaxConcurrent)
	}
	st := m.c.Status()
	if len(st.Pending) != len(m.pending) || st.Persisting != m.persist || st.LastCompleted != m.lastMeta.idOrZero() {
		return fmt.Errorf("status %+v, model pending %v persist %d last %d", st, m.pending, m.persist, m.lastDone)
	}
	if _, ok := ev.(Tick); ok {
		for id, at := range m.pending {
			if !m.full[id] && !m.now.Before(at.Add(m.s.Timeout)) {
				return fmt.Errorf("checkpoint %d triggered at %v still pending at %v past timeout", id, at, m.now)
			}
		}
	}
	return nil
}

func (md *Metadata) idOrZero() ID {
	if md == nil {
		return 0
	}
	return md.ID
}
