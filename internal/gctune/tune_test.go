package gctune

import (
	"bytes"
	"context"
	"runtime/debug"
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
	readings := []cpu{{0, 0}, {0.02, 1}, {0.05, 2}, {0.05, 2}, {0.13, 3}}
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
	go func() { tn.run(ctx, tick); close(done) }()
	for range len(readings) - 1 {
		tick <- time.Time{}
	}
	cancel()
	<-done
	// 100 at the start; 2% -> 50; 3% at 50 -> 38: Min already; no CPU
	// used: unchanged; 8% at 50 -> 100; 80 back at the end.
	want := []int{100, 50, 100, 80}
	if len(sets) != len(want) {
		t.Fatalf("GOGC set to %v, want %v", sets, want)
	}
	for k := range want {
		if sets[k] != want[k] {
			t.Fatalf("GOGC set to %v, want %v", sets, want)
		}
	}
	if n := strings.Count(logs.String(), `"message":"GOGC tuned"`); n != 2 {
		t.Errorf("%d changes logged, want 2:\n%s", n, logs.String())
	}
}

func TestRunLeavesAGOGCFromTheEnvironment(t *testing.T) {
	t.Setenv("GOGC", "200")
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	var logs bytes.Buffer
	done := make(chan struct{})
	go func() { Run(context.Background(), zerolog.New(&logs), Default, time.Millisecond); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run with GOGC in the environment did not return")
	}
	if got := debug.SetGCPercent(before); got != 123 {
		t.Errorf("GOGC is %d after Run, want 123 (untouched)", got)
	}
	if !strings.Contains(logs.String(), "the collector is not tuned") || !strings.Contains(logs.String(), `"GOGC":"200"`) {
		t.Errorf("log %q does not say GOGC is the user's", logs.String())
	}
}
