package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestTheLaterOfTwoProcessesCommittingToOneGroupStops: two processes of one
// job (same name, group and topic) with directories all their own run side
// by side while ids keep coming; nothing local tells them apart, so each
// would read every partition and write the whole output once more. Their
// commits to the group carry each one's instance: once the process started
// later has committed and then finds the other's commit in the group, it
// stops by itself with exit status 1, naming the group and the other
// instance (by its pid). The earlier one goes on, keeps completing
// checkpoints after the later one is gone, and once it has drained the
// topic and stopped on SIGTERM its output holds every id exactly once.
//
// Commits follow completed checkpoints (every 300 ms here), so the later
// process sees the earlier one's commit within a few of its own; the wait
// for its exit has a generous deadline instead of a guess at how many.
func TestTheLaterOfTwoProcessesCommittingToOneGroupStops(t *testing.T) {
	b := cluster(t)
	j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2})
	// Runs until stopped, so that both processes complete checkpoints with
	// new offsets and commit them (10M ids would last 80 minutes).
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})
	p := j.start()
	j.waitReady(p, time.Minute)
	// The earlier process has committed to the group before the later
	// one starts.
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 2 }, 50*time.Millisecond, time.Minute)

	tw := j.twin()
	q := tw.start()
	tw.requireFailure(q, 3*time.Minute, "another process commits to group "+j.name, fmt.Sprintf("pid=%d ", p.pid()))

	j.requireRunning(p, "after the later process stopped")
	done, err := p.metric(metricCheckpoints)
	if err != nil {
		j.fatalf(p, "%s: %v", p, err)
	}
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= done+3 }, 50*time.Millisecond, time.Minute)
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job in process %d times (first: %s); the earlier process must go on", p, len(errs), errs[0])
	}

	n := prod.stop(t, time.Minute)
	j.waitForAll(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, "later_process_stopped=1")
	// Whether the earlier process saw the later one's commit before it
	// stopped depends on how their commits interleaved; it is logged, not
	// required.
	t.Logf("%s logged another process's commits %d times (pid %d named in %d)", p,
		len(j.logsContaining(p, "another process commits to group")), q.pid(),
		len(j.logsContaining(p, fmt.Sprintf("pid=%d ", q.pid()))))
}
