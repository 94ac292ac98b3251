package e2e

import (
	"testing"
	"time"
)

// TestSIGTERMMidStreamExitsZeroAndRestartContinues: SIGTERM while ids are
// still being produced makes the connector exit 0, leaving no duplicate in
// its visible output; a restart continues where it stopped, and in the end
// every id is visible exactly once.
func TestSIGTERMMidStreamExitsZeroAndRestartContinues(t *testing.T) {
	// The producer runs until stopped once the restart writes and n0 ids
	// were sent (10M ids would last 80 minutes at 2,000 ids/s), so the
	// SIGTERM is mid-stream however long the first run takes to get going,
	// and the restart has new ids to continue with.
	const (
		maxIDs = 10_000_000
		n0     = 40_000 // ids at least
	)
	b := cluster(t)
	j := newJob(t, b, jobSpec{Parallelism: 4})
	prod := startProducer(t, b, j.topic, producerSpec{N: maxIDs, Rate: 2_000})

	p := j.start()
	j.waitReady(p, 30*time.Second)
	j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v > 0 }, 50*time.Millisecond, 30*time.Second)
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 2 }, 50*time.Millisecond, 30*time.Second)
	if !prod.running() {
		t.Fatalf("the producer finished before the SIGTERM: not mid-stream")
	}
	j.terminate(p, time.Minute)

	mid, err := j.out.read()
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	requireAfterSIGTERM(t, mid, int(prod.sent.Load()), "")

	p = j.start()
	j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v > 0 }, 50*time.Millisecond, 30*time.Second)
	n := prod.stopAfter(t, n0, 2*time.Minute)
	j.waitForAll(p, n, 90*time.Second)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, "sigterms=2")
}
