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
	const n = 40_000
	b := cluster(t)
	j := newJob(t, b, jobSpec{Parallelism: 4})
	prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: 2_000})

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
	t.Logf("after the first SIGTERM: %d ids produced, %d visible", prod.sent.Load(), mid.present(n))
	if tl := tallyOutput(mid, n); tl.duplicates+tl.unexpected+tl.bad > 0 {
		t.Errorf("after the first SIGTERM: %s", tl)
	}
	if mid.present(n) == 0 {
		t.Errorf("after the first SIGTERM nothing is visible: the final checkpoint was not committed")
	}

	p = j.start()
	prod.wait(t, time.Minute)
	j.waitForAll(p, n, 90*time.Second)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, "sigterms=2")
}
