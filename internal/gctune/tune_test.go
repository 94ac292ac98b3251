package gctune

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestNextAimsAtTheTargetShareWithinTheRange(t *testing.T) {
	p := Policy{Min: 50, Max: 100, Target: 0.04, Step: 10}
	for _, tc := range []struct {
		cur   int
		share float64
		want  int
	}{
		{100, 0.02, 50},   // half the target: half the GOGC
		{100, 0.01, 50},   // below Min: Min
		{100, 0.03, 75},   // 100*0.03/0.04
		{100, 0.043, 100}, // above the target at Max: stays
		{50, 0.08, 100},   // twice the target at 50: back to 100
		{50, 0.06, 75},    // 50*0.06/0.04
		{75, 0.045, 75},   // 84: a change under Step is noise
		{75, 0.035, 75},   // 66: under Step
		{55, 0.035, 50},   // 48 is below Min: Min, however small the step
		{95, 0.042, 100},  // 99.75: Max, however small the step
		{90, 0.042, 90},   // 94.5: under Step, and not Max
		{80, 0.035, 70},   // a change of Step exactly is made
	} {
		if got := p.Next(tc.cur, tc.share); got != tc.want {
			t.Errorf("Next(%d, %.3f) = %d, want %d", tc.cur, tc.share, got, tc.want)
		}
	}
	for _, share := range []float64{-1, -0.5} {
		if got := p.Next(70, share); got != 70 {
			t.Errorf("Next(70, %v) (no CPU used) = %d, want 70", share, got)
		}
	}
}

func TestShareIsTheCollectorsPartOfTheCPUUsed(t *testing.T) {
	a := cpu{gc: 1, busy: 10}
	if got := share(a, cpu{gc: 1.5, busy: 20}); got != 0.05 {
		t.Errorf("share = %v, want 0.05", got)
	}
	if got := share(a, a); got != -1 {
		t.Errorf("share of no CPU used = %v, want -1", got)
	}
}

// TestRunSetsWhatTheSharesCallForAndRestoresGOGC drives the loop with
// given readings: one GOGC set per tick that calls for a change, none for
// one that does not, the setting before restored at the end.
func TestRunSetsWhatTheSharesCallForAndRestoresGOGC(t *testing.T) {
	readings := []cpu{
		{0, 0},
		{0.02, 1},   // 2% at Min (50) -> 25: Min already, nothing set
		{0.10, 2},   // 8% -> 100
		{0.12, 2},   // a pause counted before the total: no CPU used, skipped
		{0.13, 3},   // 3% since {0.10, 2} -> 75 (1% since {0.12, 2}: 25, Min)
		{0.13, 3.5}, // 0% -> 50
		{0.17, 3.5}, // skipped, and not lost:
		{0.23, 4.5}, // 10% since {0.13, 3.5} -> 125, Max (6% since {0.17, 3.5}: 75)
	}
	var sets []int
	gogc := 80 // the setting before
	var logs bytes.Buffer
	tick := make(chan time.Time)
	i := 0
	tn := tuner{
		p:   Policy{Min: 50, Max: 100, Target: 0.04, Step: 10},
		log: zerolog.New(&logs).Level(zerolog.DebugLevel),
		read: func() cpu {
			r := readings[i]
			i++
			return r
		},
		set: func(v int) int { sets = append(sets, v); was := gogc; gogc = v; return was },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	was := tn.start()
	go func() { tn.run(ctx, tick, was); close(done) }()
	for range len(readings) - 1 {
		tick <- time.Time{}
	}
	cancel()
	<-done
	want := []int{50, 100, 75, 50, 100, 80}
	if !slices.Equal(sets, want) {
		t.Fatalf("GOGC set to %v, want %v", sets, want)
	}
	if n := strings.Count(logs.String(), `"message":"GOGC tuned"`); n != 4 {
		t.Errorf("%d changes logged, want 4:\n%s", n, logs.String())
	}
}

// TestReadCPUReadsTheRuntimesCollector: the metrics exist, and a forced
// collection shows as the collector's CPU within the CPU used.
func TestReadCPUReadsTheRuntimesCollector(t *testing.T) {
	s := make([]metrics.Sample, len(cpuMetrics))
	for i, name := range cpuMetrics {
		s[i].Name = name
	}
	runtime.GC()
	a, err := readCPU(s)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
	}
	b, err := readCPU(s)
	if err != nil {
		t.Fatal(err)
	}
	if b.gc <= a.gc || b.busy <= a.busy || b.gc-a.gc > b.busy-a.busy {
		t.Errorf("readings around three collections: %+v then %+v; want the collector's CPU and the CPU used to grow, the first within the second", a, b)
	}
}

// TestStartTunesOneAtATimeAndRestores runs the real loop: GOGC goes to
// Min at its start and back at its stop, and a second Start meanwhile
// leaves it.
func TestStartTunesOneAtATimeAndRestores(t *testing.T) {
	t.Setenv("GOGC", "") // empty is Go's default: tuned
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	var logs bytes.Buffer
	stop := Start(zerolog.New(&logs), Default, time.Hour)
	if !strings.Contains(logs.String(), "GOGC tuned while the job runs") {
		t.Errorf("Start logged %q, want its start said before it returns", logs.String())
	}
	if got := gogc(); got != Default.Min {
		t.Fatalf("GOGC is %d with a tuner started, want %d", got, Default.Min)
	}
	var second bytes.Buffer
	Start(zerolog.New(&second), Policy{Min: 10, Max: 20, Target: 0.04, Step: 1}, time.Millisecond)()
	if second.Len() != 0 {
		t.Errorf("a second Start while the first tunes logged %q: it tuned too", second.String())
	}
	if got := gogc(); got != Default.Min {
		t.Errorf("GOGC is %d after a second Start and stop, want %d (the first's)", got, Default.Min)
	}
	stop()
	if got := gogc(); got != 123 {
		t.Errorf("GOGC is %d after the stop, want 123 (restored)", got)
	}
}

// gogc reads the GOGC in effect.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestStartLeavesAGOGCFromTheEnvironment(t *testing.T) {
	t.Setenv("GOGC", "200")
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	var logs bytes.Buffer
	Start(zerolog.New(&logs), Default, time.Millisecond)()
	if got := debug.SetGCPercent(before); got != 123 {
		t.Errorf("GOGC is %d after Start and stop, want 123 (untouched)", got)
	}
	if !strings.Contains(logs.String(), "the collector is not tuned") || !strings.Contains(logs.String(), `"GOGC":"200"`) {
		t.Errorf("log %q does not say GOGC is the user's", logs.String())
	}
}
