package e2e

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashPoints are the contract's CONNECTOR_CRASH_AT values: the first hit of
// each point and later ones. Counts are per process, and with 4 workers
// after-precommit is hit 4 times per checkpoint and mid-commit once per
// renamed file, so :10 lands a few checkpoints in. during-restore is reached
// once per process, so only its first hit exists.
var crashPoints = []string{
	"after-precommit:1",
	"after-precommit:3",
	"after-precommit:10",
	"after-persist:1",
	"after-persist:3",
	"mid-commit:1",
	"mid-commit:3",
	"mid-commit:10",
	"during-restore:1",
}

// TestExactlyOnceAtEveryCrashPoint: a job started with
// CONNECTOR_CRASH_AT=<point> dies by SIGKILL at that point, for every point,
// while ids keep coming. Each point is met twice: once after a clean stop (a
// run without crash point that completes a checkpoint and exits 0 on
// SIGTERM), so the crash happens in steady state; and once straight after
// the previous crash, so it may happen while recovering from that one (for
// example mid-commit while re-committing what after-persist left). In the
// end a run without crash point drains the topic and the visible output
// holds every id exactly once: as jsonl, and as Parquet read by pyarrow.
func TestExactlyOnceAtEveryCrashPoint(t *testing.T) {
	b := cluster(t)
	for _, format := range []string{"jsonl", "parquet"} {
		t.Run(format, func(t *testing.T) {
			// Parallelism 4: four writers, so a commit renames several
			// files and mid-commit (between two renames) has a moment to hit.
			spec := jobSpec{Parallelism: 4, Partitions: 4, Interval: 200 * time.Millisecond}
			if format == "parquet" {
				spec.Config = map[string]map[string]any{"sink": parquetSink()}
			}
			j := newJob(t, b, spec)
			if format == "parquet" {
				j.out = newParquetReader(j.outDir)
			}
			everyCrashPoint(t, j, crashPoints, 2_000)
		})
	}
}

// everyCrashPoint is the crash point test on a job made already: with ids
// produced at rate per second all along, each of points is met after a
// clean stop and straight after the previous crash; then a run without
// crash point drains the topic and the output holds every id once.
func everyCrashPoint(t *testing.T, j *job, points []string, rate float64) {
	const perPoint = 30 * time.Second
	// Runs until stopped: mid-commit needs records flowing. 10M ids last
	// longer than any run of this test may take.
	prod := startProducer(t, j.brokers, j.topic, producerSpec{N: 10_000_000, Rate: rate})

	var hit []string
	for _, afterCleanStop := range []bool{true, false} {
		for _, point := range points {
			if afterCleanStop {
				p := j.start()
				j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, 30*time.Second)
				j.terminate(p, time.Minute)
			}
			if j.crashAt(point, perPoint) {
				hit = append(hit, point)
			}
		}
	}

	n := prod.stop(t, time.Minute)
	p := j.start()
	j.waitForAll(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, len(hit), fmt.Sprintf("crash_points=%d", len(hit)))
}

// crashAt starts a run with CONNECTOR_CRASH_AT=point and reports whether it
// died there by SIGKILL within timeout; if not, the test is marked failed.
func (j *job) crashAt(point string, timeout time.Duration) bool {
	j.t.Helper()
	p := j.start(envCrashAt + "=" + point)
	if !p.wait(timeout) {
		j.errorf(p, "%s: alive %v after its start: crash point %s never reached", p, timeout, point)
		j.kill(p)
		return false
	}
	if !p.killedBy(syscall.SIGKILL) {
		j.errorf(p, "%s: %s, want death by SIGKILL at %s", p, p.status(), point)
		return false
	}
	name, _, _ := strings.Cut(point, ":")
	// The whole log, not its tail: other goroutines may still log between
	// the crash point's line and the kill.
	log, err := os.ReadFile(p.logPath)
	if err != nil {
		j.t.Fatalf("read %s: %v", p.logPath, err)
	}
	if !strings.Contains(string(log), "crash point "+name+" reached") {
		j.errorf(p, "%s: died by SIGKILL, but its log does not say crash point %s was reached", p, name)
		return false
	}
	j.t.Logf("%s: died by SIGKILL at %s, %v after its start", p, point, time.Since(p.started).Round(time.Millisecond))
	return true
}
