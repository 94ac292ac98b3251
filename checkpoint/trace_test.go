package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// t0 is time 0 of the scripts' clock; scripts write times as offsets from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestCoordinatorTraces runs testdata/coord_*.txt. Commands, one per input line
// (a block may hold several; it prints the actions they cause, in order):
//
//	coordinator tasks=A,B [interval=D] [initial-delay=D] [rand=F] [min-pause=D]
//	            [timeout=D] [max-concurrent=N] [tolerable=N] [last=ID] [max-seen=ID]
//	    Makes a Coordinator from DefaultSettings changed as given (rand=F makes
//	    Rand return F; last=ID restores a completed checkpoint ID) and prints
//	    its status.
//	tick D                         Tick at script time D.
//	trigger-now                    TriggerNow (a final checkpoint).
//	ack TASK ID [files=F,G] [bytes=N]
//	decline TASK ID [REASON...]
//	persisted ID                   MetadataPersisted.
//	persist-failed ID ERR...       MetadataPersistFailed.
//	task-failed TASK
//	status                         Prints pending, persisting, last completed,
//	                               next id and the failure count.
func TestCoordinatorTraces(t *testing.T) {
	for _, file := range scripts(t, "coord_") {
		t.Run(strings.TrimSuffix(file[len("testdata/"):], ".txt"), func(t *testing.T) {
			var c *Coordinator
			runScript(t, file, func(t *testing.T, input []string) []string {
				var out []string
				for _, line := range input {
					f := strings.Fields(line)
					if f[0] == "coordinator" {
						var err error
						if c, err = newScriptCoordinator(f[1:]); err != nil {
							return []string{"error: " + err.Error()}
						}
						out = append(out, statusLine(c))
						continue
					}
					if c == nil {
						t.Fatalf("%q before coordinator", line)
					}
					if f[0] == "status" {
						out = append(out, statusLine(c))
						continue
					}
					ev, err := scriptEvent(f)
					if err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					if err := c.Step(ev); err != nil {
						out = append(out, "error: "+err.Error())
					}
					for _, a := range c.Actions() {
						out = append(out, formatAction(a))
					}
				}
				return out
			})
		})
	}
}

func newScriptCoordinator(args []string) (*Coordinator, error) {
	s := DefaultSettings()
	s.Interval = 10 * time.Second
	s.InitialDelayMax = 0
	var tasks []TaskID
	var last *Metadata
	var maxSeen ID
	for _, kv := range args {
		k, v, _ := strings.Cut(kv, "=")
		d, _ := time.ParseDuration(v)
		n, _ := strconv.Atoi(v)
		switch k {
		case "tasks":
			for _, t := range strings.Split(v, ",") {
				tasks = append(tasks, TaskID(t))
			}
		case "interval":
			s.Interval = d
		case "initial-delay":
			s.InitialDelayMax = d
		case "rand":
			f, _ := strconv.ParseFloat(v, 64)
			s.Rand = func() float64 { return f }
		case "min-pause":
			s.MinPause = d
		case "timeout":
			s.Timeout = d
		case "max-concurrent":
			s.MaxConcurrent = n
		case "tolerable":
			s.TolerableFailures = n
		case "mode":
			m, err := ParseMode(v)
			if err != nil {
				return nil, err
			}
			s.Mode = m
		case "last":
			last = &Metadata{ID: ID(n), Tasks: map[TaskID]Snapshot{}}
		case "max-seen":
			maxSeen = ID(n)
		default:
			return nil, fmt.Errorf("unknown argument %q", kv)
		}
	}
	return NewCoordinator(s, tasks, last, maxSeen)
}

func scriptEvent(f []string) (Event, error) {
	id := func(i int) ID {
		n, _ := strconv.Atoi(f[i])
		return ID(n)
	}
	need := func(n int) error {
		if len(f) < n {
			return fmt.Errorf("want at least %d fields", n)
		}
		return nil
	}
	switch f[0] {
	case "tick":
		if err := need(2); err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(f[1])
		return Tick{Now: t0.Add(d)}, err
	case "trigger-now":
		return TriggerNow{}, nil
	case "ack":
		if err := need(3); err != nil {
			return nil, err
		}
		a := Ack{Task: TaskID(f[1]), ID: id(2), Snapshot: Snapshot{Data: []byte(f[1])}}
		for _, kv := range f[3:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "files":
				a.Snapshot.Files = strings.Split(v, ",")
			case "bytes":
				n, _ := strconv.Atoi(v)
				a.Metrics.Bytes = int64(n)
			default:
				return nil, fmt.Errorf("unknown argument %q", kv)
			}
		}
		return a, nil
	case "decline":
		if err := need(3); err != nil {
			return nil, err
		}
		var reason error
		if len(f) > 3 {
			reason = errors.New(strings.Join(f[3:], " "))
		}
		return Decline{Task: TaskID(f[1]), ID: id(2), Reason: reason}, nil
	case "persisted":
		if err := need(2); err != nil {
			return nil, err
		}
		return MetadataPersisted{ID: id(1)}, nil
	case "persist-failed":
		if err := need(3); err != nil {
			return nil, err
		}
		return MetadataPersistFailed{ID: id(1), Err: errors.New(strings.Join(f[2:], " "))}, nil
	case "task-failed":
		if err := need(2); err != nil {
			return nil, err
		}
		return TaskFailed{Task: TaskID(f[1]), Err: errors.New("crashed")}, nil
	}
	return nil, fmt.Errorf("unknown command %q", f[0])
}

// formatAction prints what a trace is about: times as script offsets, task
// names and files but not snapshot data.
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
		return s
	}
	return a.String()
}

func statusLine(c *Coordinator) string {
	st := c.Status()
	s := fmt.Sprintf("status: pending=%v persisting=%d last-completed=%d next-id=%d failures=%d",
		st.Pending, st.Persisting, st.LastCompleted, st.NextID, st.ConsecutiveFailures)
	if st.Failed != nil {
		s += " failed"
	}
	return s
}

// TestAlignerTraces runs testdata/align_*.txt. Commands:
//
//	aligner channels=N [mode=exactly_once|at_least_once] [max-held-bytes=N]
//	    Makes an Aligner of string records. Prints nothing.
//	feed
//	[@D] CH rec VALUE [SIZE]     a record (SIZE bytes, default len(VALUE))
//	[@D] CH barrier ID           barrier ID (timestamp 0)
//	[@D] CH cancel ID            a cancellation marker
//	[@D] CH end                  the channel's end
//	[@D] abort ID                the Coordinator aborted ID (Aligner.Abort)
//	    Feeds each line (at script time D, else the last time given) and
//	    prints, per line, the outputs in order, "held" if the element was
//	    held, and the blocked channels and aligning checkpoints when they
//	    changed; "-" if nothing happened.
func TestAlignerTraces(t *testing.T) {
	for _, file := range scripts(t, "align_") {
		t.Run(strings.TrimSuffix(file[len("testdata/"):], ".txt"), func(t *testing.T) {
			var a *Aligner[string]
			now := t0
			runScript(t, file, func(t *testing.T, input []string) []string {
				f := strings.Fields(input[0])
				switch f[0] {
				case "aligner":
					s := AlignerSettings{}
					for _, kv := range f[1:] {
						k, v, _ := strings.Cut(kv, "=")
						n, _ := strconv.Atoi(v)
						switch k {
						case "channels":
							s.Channels = n
						case "mode":
							m, err := ParseMode(v)
							if err != nil {
								t.Fatal(err)
							}
							s.Mode = m
						case "max-held-bytes":
							s.MaxHeldBytes = int64(n)
						default:
							t.Fatalf("unknown argument %q", kv)
						}
					}
					var err error
					if a, err = NewAligner[string](s); err != nil {
						return []string{"error: " + err.Error()}
					}
					now = t0
					return nil
				case "feed":
					var out []string
					for _, line := range input[1:] {
						out = append(out, feedLine(t, a, &now, line))
					}
					return out
				}
				t.Fatalf("unknown command %q", input[0])
				return nil
			})
		})
	}
}

func feedLine(t *testing.T, a *Aligner[string], now *time.Time, line string) string {
	f := strings.Fields(line)
	if strings.HasPrefix(f[0], "@") {
		d, err := time.ParseDuration(f[0][1:])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		*now = t0.Add(d)
		f = f[1:]
	}
	blocked0, aligning0 := blockedSet(a), fmt.Sprint(a.Aligning())
	held0, _ := a.Held()
	var outs []Output[string]
	var err error
	if f[0] == "abort" {
		n, _ := strconv.Atoi(f[1])
		outs = a.Abort(*now, ID(n))
	} else {
		ch, _ := strconv.Atoi(f[0])
		var el Element[string]
		switch f[1] {
		case "rec":
			el = Element[string]{Kind: RecordElement, Record: f[2], Size: int64(len(f[2]))}
			if len(f) > 3 {
				n, _ := strconv.Atoi(f[3])
				el.Size = int64(n)
			}
		case "barrier":
			n, _ := strconv.Atoi(f[2])
			el = Element[string]{Kind: BarrierElement, Barrier: Barrier{ID: ID(n)}}
		case "cancel":
			n, _ := strconv.Atoi(f[2])
			el = Element[string]{Kind: CancelElement, Cancel: CancelMarker{ID: ID(n)}}
		case "end":
			el = Element[string]{Kind: EndOfChannel}
		default:
			t.Fatalf("%q: unknown element", line)
		}
		outs, err = a.Process(*now, ch, el)
	}
	var parts []string
	if err != nil {
		parts = append(parts, "error: "+err.Error())
	}
	for _, o := range outs {
		parts = append(parts, formatOutput(o))
	}
	if held, _ := a.Held(); held > held0 {
		parts = append(parts, "held")
	}
	if b := blockedSet(a); b != blocked0 {
		parts = append(parts, "blocked="+b)
	}
	if al := fmt.Sprint(a.Aligning()); al != aligning0 {
		parts = append(parts, "aligning="+al)
	}
	if len(parts) == 0 {
		parts = append(parts, "-")
	}
	return strings.Join(f, " ") + " -> " + strings.Join(parts, "; ")
}

func formatOutput(o Output[string]) string {
	switch o.Kind {
	case ProcessRecord:
		return fmt.Sprintf("process %d:%s", o.Channel, o.Record)
	case SnapshotAndForward:
		s := fmt.Sprintf("snapshot %d aligned=%v", o.Barrier.ID, o.Alignment.Duration)
		if o.Alignment.HeldCount > 0 {
			s += fmt.Sprintf(" held=%d/%dB", o.Alignment.HeldCount, o.Alignment.HeldBytes)
		}
		return s
	case CancelAndForward:
		return fmt.Sprintf("cancel %d (%v)", o.Barrier.ID, o.Reason)
	case InputEnded:
		return "input-ended"
	}
	return fmt.Sprintf("output kind %d", o.Kind)
}

func blockedSet(a *Aligner[string]) string {
	var b []int
	for ch := range a.blocked {
		if a.Blocked(ch) {
			b = append(b, ch)
		}
	}
	return fmt.Sprint(b)
}
