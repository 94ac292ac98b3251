package e2e

import (
	"slices"
	"testing"
	"time"
)

// TestRestartAfterSIGKILLWritesFirstRecordWithinFiveSeconds: three times, a
// job that is consuming and checkpointing is SIGKILLed and restarted at once;
// each restart has connector_records_out_total > 0 on /metrics (polled every
// 50 ms) within 5 s of the process start, so it never waits out a dead
// member's session. The output stays exactly once.
func TestRestartAfterSIGKILLWritesFirstRecordWithinFiveSeconds(t *testing.T) {
	const (
		n0     = 24_000 // ids at least
		rate   = 2_000  // ids/s
		rounds = 3
		limit  = 5 * time.Second
	)
	b := cluster(t)
	j := newJob(t, b, jobSpec{Parallelism: 4})
	// Runs until stopped after the rounds (and n0 ids), so every restart has
	// new ids to write however long the rounds take (10M ids would last 80
	// minutes).
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: rate})
	positive := func(v float64) bool { return v > 0 }

	p := j.start()
	var took []time.Duration
	for round := 1; round <= rounds; round++ {
		j.waitMetric(p, metricRecordsOut, positive, 50*time.Millisecond, 30*time.Second)
		j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, 30*time.Second)
		if !prod.running() {
			t.Fatalf("round %d: the producer finished before the kill; the restart would find nothing new to write", round)
		}
		j.kill(p)
		p = j.start()
		_, d := j.waitMetric(p, metricRecordsOut, positive, 50*time.Millisecond, 30*time.Second)
		t.Logf("restart %d after SIGKILL: first record out %v after the process start", round, d.Round(time.Millisecond))
		if d >= limit {
			j.errorf(p, "restart %d after SIGKILL: first record out after %v, want < %v", round, d, limit)
		}
		took = append(took, d)
	}
	t.Logf("restart after SIGKILL: first record out within %v (worst of %d)", slices.Max(took).Round(time.Millisecond), rounds)

	n := prod.stopAfter(t, n0, 2*time.Minute)
	j.waitForAll(p, n, 90*time.Second)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, rounds, "")
}
