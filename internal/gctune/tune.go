package gctune

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Policy bounds the GOGC the tuner sets and names the collector's share of
// the process's busy CPU it aims at.
type Policy struct {
	Min, Max int     // GOGC's range
	Target   float64 // the collector's share of the CPU used, 0-1
	// Step is the least change worth making: smaller ones are noise in
	// the share, not a change of the job.
	Step int
}

// Default is the policy of `connector run` and `connector dev`.
var Default = Policy{Min: 40, Max: 100, Target: 0.04, Step: 10}

// Next is the GOGC to set after a sample where the collector took share of
// the CPU the process used at GOGC cur. The collector's work goes about as
// the number of collections, which goes as 1/GOGC at a given allocation
// rate: at GOGC g the share would be share*cur/g, which is Target at
// g = cur*share/Target. A sample with no CPU used (share < 0) keeps cur.
func (p Policy) Next(cur int, share float64) int {
	if share < 0 || math.IsNaN(share) || math.IsInf(share, 0) {
		return cur
	}
	want := int(math.Round(float64(cur) * share / p.Target))
	want = min(max(want, p.Min), p.Max)
	if d := want - cur; d > -p.Step && d < p.Step && want != p.Min && want != p.Max {
		return cur
	}
	return want
}

// cpu is what the tuner reads of runtime/metrics: seconds of CPU, summed
// over the process's Ps, since it started, as of the end of the last
// collection (the runtime updates its CPU classes then, not in between).
// The collector's marking on Ps that were idle otherwise counts as the
// collector's: a job that leaves cores idle shows a larger share, and the
// tuner leaves it more room, nearer Go's default. Left out, the share of
// the 1 KB drain, which spends 13% more CPU per record at GOGC=50, fell
// from 4-6% to 2.7-5.3% and the tuner took it as low as 69.
type cpu struct{ gc, busy float64 }

var cpuMetrics = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
}

// errNoMetric: this Go's runtime/metrics lacks one of cpuMetrics.
var errNoMetric = errors.New("a runtime metric of the collector's CPU is missing")

func readCPU(s []metrics.Sample) (cpu, error) {
	metrics.Read(s)
	var v [3]float64
	for i := range s {
		if s[i].Value.Kind() != metrics.KindFloat64 {
			return cpu{}, errNoMetric
		}
		v[i] = s[i].Value.Float64()
	}
	gc, total, idle := v[0], v[1], v[2]
	return cpu{gc: gc, busy: total - idle}, nil
}

// share is the collector's part of the CPU used between a and b; -1 when
// none was used (no collection ended in between).
func share(a, b cpu) float64 {
	busy := b.busy - a.busy
	if busy <= 0 {
		return -1
	}
	return (b.gc - a.gc) / busy
}

// running is set while a tuner runs: one at a time in a process, as GOGC
// is the process's.
var running atomic.Bool

// Start starts tuning GOGC every interval by p and returns the function
// that stops it, sets GOGC back to what it was, and returns once both are
// done. GOGC is p.Min when it returns. It does not tune, and its stop does
// nothing, when GOGC is set in the environment or another tuner runs.
// Whatever it logs at its start it logs before it returns (a test's log
// writer need not be safe for concurrent use until the first change, an
// interval later).
func Start(log zerolog.Logger, p Policy, interval time.Duration) (stop func()) {
	if v := os.Getenv("GOGC"); v != "" {
		log.Info().Str("GOGC", v).Msg("GOGC set in the environment: the collector is not tuned")
		return func() {}
	}
	if !running.CompareAndSwap(false, true) {
		return func() {}
	}
	s := make([]metrics.Sample, len(cpuMetrics))
	for i, name := range cpuMetrics {
		s[i].Name = name
	}
	if _, err := readCPU(s); err != nil {
		log.Warn().Err(err).Msg("the collector is not tuned")
		running.Store(false)
		return func() {}
	}
	log.Info().Int("min", p.Min).Int("max", p.Max).Float64("target_gc_cpu_share", p.Target).Msg("GOGC tuned while the job runs (GOGC in the environment turns it off)")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tn := tuner{p: p, log: log, read: func() cpu { c, _ := readCPU(s); return c }, set: debug.SetGCPercent}
	was := tn.start()
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		tn.run(ctx, t.C, was)
	}()
	return func() {
		cancel()
		<-done
		running.Store(false)
	}
}

// tuner is Start's loop, its readings and its setting of GOGC given (tests
// give their own).
type tuner struct {
	p    Policy
	log  zerolog.Logger
	read func() cpu    // the CPU used so far
	set  func(int) int // sets GOGC, returns the one before
}

// start sets GOGC to p.Min and returns the GOGC before, for run to set
// back. The low end first: a job's heap is at its largest as it starts (a
// backlog to drain, its state to load), before a reading of the
// collector's share can say it needs more room. Started at Max, bench/'s
// dedup over 1M keys peaked in its first second, at GOGC 100 (a heap goal
// of 45-50 MiB, against 31-37 at 40 later); a job that needs more room
// gets it at the first reading (the 1 KB drain: 40 -> 100).
func (t tuner) start() (was int) { return t.set(t.p.Min) }

// run sets GOGC at each tick to p.Next of the share of the CPU used since
// the last reading that saw some; when ctx ends, back to was.
func (t tuner) run(ctx context.Context, tick <-chan time.Time, was int) {
	defer t.set(was)
	cur, last := t.p.Min, t.read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		now := t.read()
		sh := share(last, now)
		if sh < 0 {
			continue // no collection ended since last: wait for one
		}
		last = now
		if next := t.p.Next(cur, sh); next != cur {
			t.set(next)
			t.log.Debug().Int("from", cur).Int("to", next).Float64("gc_cpu_share", sh).Msg("GOGC tuned")
			cur = next
		}
	}
}
