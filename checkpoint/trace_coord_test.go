package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestCoordinatorTraces runs testdata/coord/*.txt, each file on a fresh
// coordEnv. A test case may hold several commands (its input lines are more
// commands); it prints what they cause, in order: the actions handed out, an
// "error: ..." line for an event Step rejects, and the status lines asked for.
// Nothing printed means no action. The commands are those of
// coordEnv.handle.
func TestCoordinatorTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/coord", func(t *testing.T, path string) {
		env := &coordEnv{}
		datadriven.RunTest(t, path, env.Handle)
	})
}

// coordEnv is the state of one coordinator script.
type coordEnv struct {
	c   *Coordinator
	out strings.Builder
}

// Handle runs a test case and returns what it printed.
func (e *coordEnv) Handle(t *testing.T, d *datadriven.TestData) string {
	e.out.Reset()
	for _, cmd := range commands(t, d) {
		e.handle(t, cmd)
	}
	return e.out.String()
}

func (e *coordEnv) handle(t *testing.T, d *datadriven.TestData) {
	if d.Cmd != "coordinator" && e.c == nil {
		d.Fatalf(t, "%s without a coordinator", d.Cmd)
	}
	switch d.Cmd {
	case "coordinator":
		e.handleCoordinator(t, d)
	case "status":
		e.handleStatus(t, d)
	case "tick":
		e.handleTick(t, d)
	case "trigger-now":
		e.handleTriggerNow(t, d)
	case "ack":
		e.handleAck(t, d)
	case "decline":
		e.handleDecline(t, d)
	case "persisted":
		e.handlePersisted(t, d)
	case "persist-failed":
		e.handlePersistFailed(t, d)
	case "task-failed":
		e.handleTaskFailed(t, d)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
}

// handleCoordinator makes the Coordinator the later commands drive (see
// newScriptCoordinator for the arguments). It prints nothing, or the error
// NewCoordinator returned (and the later commands have no Coordinator).
//
//	coordinator tasks=(source, sink) interval=10s max-concurrent=2
func (e *coordEnv) handleCoordinator(t *testing.T, d *datadriven.TestData) {
	var err error
	if e.c, err = newScriptCoordinator(t, d); err != nil {
		e.printf("error: %v", err)
	}
}

// newScriptCoordinator makes a Coordinator from DefaultSettings with a 10s
// interval and no initial delay, changed by d's arguments:
//
//	tasks=(A, B)      the tasks (required)
//	interval=D        Settings.Interval
//	initial-delay=D   Settings.InitialDelay
//	rand=F            Settings.Rand returns F
//	min-pause=D       Settings.MinPause
//	timeout=D         Settings.Timeout
//	max-concurrent=N  Settings.MaxConcurrent
//	tolerable=N       Settings.TolerableFailures
//	mode=M            Settings.Mode (exactly_once or at_least_once)
//	last=ID           the restored last completed checkpoint ID
//	max-seen=ID       the highest checkpoint id seen on disk
//
// It is the only place the trace tests use Settings.
func newScriptCoordinator(t *testing.T, d *datadriven.TestData) (*Coordinator, error) {
	positional(t, d, 0, "tasks", "interval", "initial-delay", "rand", "min-pause", "timeout",
		"max-concurrent", "tolerable", "mode", "last", "max-seen")
	s := DefaultSettings()
	s.Interval = 10 * time.Second
	s.InitialDelay = 0
	d.MaybeScanArgs(t, "interval", &s.Interval)
	d.MaybeScanArgs(t, "initial-delay", &s.InitialDelay)
	var f float64
	if d.MaybeScanArgs(t, "rand", &f) {
		s.Rand = func() float64 { return f }
	}
	d.MaybeScanArgs(t, "min-pause", &s.MinPause)
	d.MaybeScanArgs(t, "timeout", &s.Timeout)
	d.MaybeScanArgs(t, "max-concurrent", &s.MaxConcurrent)
	d.MaybeScanArgs(t, "tolerable", &s.TolerableFailures)
	var mode string
	if d.MaybeScanArgs(t, "mode", &mode) {
		m, err := ParseMode(mode)
		if err != nil {
			return nil, err
		}
		s.Mode = m
	}
	var names []string
	d.ScanArgs(t, "tasks", &names)
	tasks := make([]TaskID, len(names))
	for i, n := range names {
		tasks[i] = TaskID(n)
	}
	var last *Metadata
	var id uint64
	if d.MaybeScanArgs(t, "last", &id) {
		last = &Metadata{ID: ID(id), Tasks: map[TaskID]Snapshot{}}
	}
	var maxSeen uint64
	d.MaybeScanArgs(t, "max-seen", &maxSeen)
	return NewCoordinator(s, tasks, last, ID(maxSeen))
}

// handleStatus prints the Coordinator's status: the pending checkpoints, the
// one being persisted, the last completed one, the next id, the count of
// consecutive failures and whether the job failed.
//
//	status
func (e *coordEnv) handleStatus(t *testing.T, d *datadriven.TestData) {
	positional(t, d, 0)
	st := e.c.Status()
	failed := ""
	if st.Failed != nil {
		failed = " failed"
	}
	e.printf("status: pending=%v persisting=%d last-completed=%d next-id=%d failures=%d%s",
		st.Pending, st.Persisting, st.LastCompleted, st.NextID, st.ConsecutiveFailures, failed)
}

// handleTick steps a Tick at script time D.
//
//	tick 10s
func (e *coordEnv) handleTick(t *testing.T, d *datadriven.TestData) {
	at, err := time.ParseDuration(positional(t, d, 1)[0])
	if err != nil {
		d.Fatalf(t, "tick: %v", err)
	}
	e.step(Tick{Now: t0.Add(at)})
}

// handleTriggerNow steps TriggerNow (a final checkpoint), at the time given
// (after the script's start) or with none.
//
//	trigger-now [at=D]
func (e *coordEnv) handleTriggerNow(t *testing.T, d *datadriven.TestData) {
	positional(t, d, 0, "at")
	var ev TriggerNow
	if d.HasArg("at") {
		var s string
		d.ScanArgs(t, "at", &s)
		at, err := time.ParseDuration(s)
		if err != nil {
			d.Fatalf(t, "trigger-now: %v", err)
		}
		ev.Now = t0.Add(at)
	}
	e.step(ev)
}

// handleAck steps task TASK's Ack of checkpoint ID; its snapshot lists the
// files given (none by default) and its metrics the bytes given (0 by
// default).
//
//	ack TASK ID [files=(F, G)] [bytes=N] [start-delay=D]
func (e *coordEnv) handleAck(t *testing.T, d *datadriven.TestData) {
	p := positional(t, d, 2, "files", "bytes", "start-delay")
	a := Ack{Task: TaskID(p[0]), ID: scriptID(t, d, p[1]), Snapshot: Snapshot{Data: []byte(p[0])}}
	d.MaybeScanArgs(t, "files", &a.Snapshot.Files)
	d.MaybeScanArgs(t, "bytes", &a.Metrics.Bytes)
	var delay string
	if d.MaybeScanArgs(t, "start-delay", &delay) {
		var err error
		if a.Metrics.StartDelay, err = time.ParseDuration(delay); err != nil {
			d.Fatalf(t, "start-delay: %v", err)
		}
	}
	e.step(a)
}

// handleDecline steps task TASK's Decline of checkpoint ID, for the reason
// given (none by default).
//
//	decline TASK ID [reason=(disk full)]
func (e *coordEnv) handleDecline(t *testing.T, d *datadriven.TestData) {
	p := positional(t, d, 2, "reason")
	ev := Decline{Task: TaskID(p[0]), ID: scriptID(t, d, p[1])}
	var reason string
	if d.MaybeScanArgs(t, "reason", &reason) {
		ev.Reason = errors.New(reason)
	}
	e.step(ev)
}

// handlePersisted steps MetadataPersisted for checkpoint ID.
//
//	persisted ID
func (e *coordEnv) handlePersisted(t *testing.T, d *datadriven.TestData) {
	e.step(MetadataPersisted{ID: scriptID(t, d, positional(t, d, 1)[0])})
}

// handlePersistFailed steps MetadataPersistFailed for checkpoint ID with the
// error given.
//
//	persist-failed ID err=(no space left on device)
func (e *coordEnv) handlePersistFailed(t *testing.T, d *datadriven.TestData) {
	p := positional(t, d, 1, "err")
	var msg string
	d.ScanArgs(t, "err", &msg)
	e.step(MetadataPersistFailed{ID: scriptID(t, d, p[0]), Err: errors.New(msg)})
}

// handleTaskFailed steps TaskFailed for task TASK (error "crashed").
//
//	task-failed TASK
func (e *coordEnv) handleTaskFailed(t *testing.T, d *datadriven.TestData) {
	e.step(TaskFailed{Task: TaskID(positional(t, d, 1)[0]), Err: errors.New("crashed")})
}

// step feeds ev to the Coordinator and prints the error Step returns, if
// any, and then the actions handed out.
func (e *coordEnv) step(ev Event) {
	if err := e.c.Step(ev); err != nil {
		e.printf("error: %v", err)
	}
	for _, a := range e.c.Actions() {
		e.printf("%s", formatAction(a))
	}
}

func (e *coordEnv) printf(format string, args ...any) {
	fmt.Fprintf(&e.out, format+"\n", args...)
}

// formatAction prints what a trace is about: times as script offsets, task
// names and files but not snapshot data, bytes only when some were reported.
func formatAction(a Action) string {
	switch a := a.(type) {
	case TriggerSources:
		return fmt.Sprintf("trigger %d at %v", a.ID, a.Timestamp.Sub(t0))
	case PersistMetadata:
		var tasks []string
		for task, s := range a.Metadata.Tasks {
			if len(s.Files) > 0 {
				tasks = append(tasks, fmt.Sprintf("%s%v", task, s.Files))
			} else {
				tasks = append(tasks, string(task))
			}
		}
		slices.Sort(tasks)
		return fmt.Sprintf("persist %d (triggered at %v) tasks=%s", a.Metadata.ID, a.Metadata.Timestamp.Sub(t0), strings.Join(tasks, ","))
	case NotifyComplete:
		s := fmt.Sprintf("notify-complete %d", a.ID)
		if a.Totals.Bytes > 0 {
			s += fmt.Sprintf(" bytes=%d", a.Totals.Bytes)
		}
		if a.Totals.StartDelay > 0 {
			s += fmt.Sprintf(" start-delay=%v", a.Totals.StartDelay)
		}
		return s
	}
	return a.String()
}
