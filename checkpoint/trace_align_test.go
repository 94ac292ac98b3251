package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestAlignerTraces runs testdata/align/*.txt, each file on a fresh alignEnv.
// The commands are those of alignEnv.Handle.
func TestAlignerTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/align", func(t *testing.T, path string) {
		env := &alignEnv{}
		datadriven.RunTest(t, path, env.Handle)
	})
}

// alignEnv is the state of one aligner script: an Aligner of string records
// and the script's clock.
type alignEnv struct {
	a   *Aligner[string]
	now time.Time
}

// Handle runs a test case and returns what it printed.
func (e *alignEnv) Handle(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "aligner" && e.a == nil {
		d.Fatalf(t, "%s without an aligner", d.Cmd)
	}
	switch d.Cmd {
	case "aligner":
		return e.handleAligner(t, d)
	case "feed":
		return e.handleFeed(t, d)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// handleAligner makes the Aligner the later commands drive and sets the clock
// to 0. It prints nothing, or the error NewAligner returned (and the later
// commands have no Aligner). Arguments:
//
//	channels=N        AlignerSettings.Channels
//	mode=M            AlignerSettings.Mode (exactly_once, the default, or
//	                  at_least_once)
//	max-held-bytes=N  AlignerSettings.MaxHeldBytes
//
// Example:
//
//	aligner channels=2 mode=at_least_once max-held-bytes=5
func (e *alignEnv) handleAligner(t *testing.T, d *datadriven.TestData) string {
	positional(t, d, 0, "channels", "mode", "max-held-bytes")
	var s AlignerSettings
	d.ScanArgs(t, "channels", &s.Channels)
	var mode string
	if d.MaybeScanArgs(t, "mode", &mode) {
		m, err := ParseMode(mode)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.Mode = m
	}
	d.MaybeScanArgs(t, "max-held-bytes", &s.MaxHeldBytes)
	var err error
	if e.a, err = NewAligner[string](s); err != nil {
		return "error: " + err.Error()
	}
	e.now = t0
	return ""
}

// handleFeed feeds the input lines to the Aligner, one element (or abort) a
// line:
//
//	[@D] CH rec VALUE [SIZE]  a record on channel CH (SIZE bytes, default
//	                          len(VALUE))
//	[@D] CH barrier ID [T]    barrier ID, triggered at script time T (else
//	                          its timestamp is unset)
//	[@D] CH cancel ID         a cancellation marker for ID
//	[@D] CH end               the channel's end
//	[@D] abort ID             the Coordinator aborted ID (Aligner.Abort)
//
// @D sets the clock to script time D first (else the time stays that of the
// previous line). It prints a line per input line: the line without @D, "->",
// then the outputs in order, "held" if the element was held, and the blocked
// channels and aligning checkpoints when they changed; "-" if nothing
// happened.
//
// Example:
//
//	feed
//	@1s 0 barrier 1
//	0 rec a
//	@3s 1 barrier 1
func (e *alignEnv) handleFeed(t *testing.T, d *datadriven.TestData) string {
	positional(t, d, 0)
	var out strings.Builder
	for _, line := range strings.Split(d.Input, "\n") {
		if strings.TrimSpace(line) != "" {
			fmt.Fprintln(&out, e.feedLine(t, d, line))
		}
	}
	return out.String()
}

func (e *alignEnv) feedLine(t *testing.T, d *datadriven.TestData, line string) string {
	f := strings.Fields(line)
	if strings.HasPrefix(f[0], "@") {
		at, err := time.ParseDuration(f[0][1:])
		if err != nil {
			d.Fatalf(t, "%q: %v", line, err)
		}
		e.now = t0.Add(at)
		f = f[1:]
	}
	a := e.a
	blocked0, aligning0 := blockedSet(a), fmt.Sprint(a.Aligning())
	held0, _ := a.Held()
	var outs []Output[string]
	var err error
	if len(f) == 2 && f[0] == "abort" {
		outs = a.Abort(e.now, scriptID(t, d, f[1]))
	} else {
		ch, el := parseElement(t, d, line, f)
		outs, err = a.Process(e.now, ch, el)
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

// parseElement parses the fields f of a feed line (without @D) naming an
// element on a channel.
func parseElement(t *testing.T, d *datadriven.TestData, line string, f []string) (int, Element[string]) {
	t.Helper()
	bad := func() { d.Fatalf(t, "bad feed line %q", line) }
	if len(f) < 2 {
		bad()
	}
	ch, err := strconv.Atoi(f[0])
	if err != nil {
		bad()
	}
	switch {
	case f[1] == "rec" && (len(f) == 3 || len(f) == 4):
		el := Element[string]{Kind: RecordElement, Record: f[2], Size: int64(len(f[2]))}
		if len(f) == 4 {
			if el.Size, err = strconv.ParseInt(f[3], 10, 64); err != nil {
				bad()
			}
		}
		return ch, el
	case f[1] == "barrier" && (len(f) == 3 || len(f) == 4):
		b := Barrier{ID: scriptID(t, d, f[2])}
		if len(f) == 4 {
			at, err := time.ParseDuration(f[3])
			if err != nil {
				bad()
			}
			b.Timestamp = t0.Add(at)
		}
		return ch, Element[string]{Kind: BarrierElement, Barrier: b}
	case f[1] == "cancel" && len(f) == 3:
		return ch, Element[string]{Kind: CancelElement, Cancel: CancelMarker{ID: scriptID(t, d, f[2])}}
	case f[1] == "end" && len(f) == 2:
		return ch, Element[string]{Kind: EndOfChannel}
	}
	bad()
	return 0, Element[string]{}
}

// formatOutput prints an Output: records with their channel, alignments with
// their duration and what was held, cancellations with their reason.
func formatOutput(o Output[string]) string {
	switch o.Kind {
	case ProcessRecord:
		return fmt.Sprintf("process %d:%s", o.Channel, o.Record)
	case SnapshotAndForward:
		s := fmt.Sprintf("snapshot %d aligned=%v", o.Barrier.ID, o.Alignment.Duration)
		if o.Alignment.StartDelay > 0 {
			s += fmt.Sprintf(" start-delay=%v", o.Alignment.StartDelay)
		}
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

// blockedSet prints the blocked channels.
func blockedSet(a *Aligner[string]) string {
	var b []int
	for ch := range a.blocked {
		if a.Blocked(ch) {
			b = append(b, ch)
		}
	}
	return fmt.Sprint(b)
}
