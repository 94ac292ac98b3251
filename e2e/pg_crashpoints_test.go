package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// pgCrashPoints are the CONNECTOR_CRASH_AT values the PostgreSQL sink
// reaches (mid-commit is the file sink's): the first hit of each and later
// ones. Counts are per process. With 4 writers, after-precommit is hit 4
// times per checkpoint, before-endtxn once per writer's transaction
// committed (also when a start writes one again from its spool), and
// between-commits 3 times per checkpoint whose 4 writers all wrote
// something. during-restore is reached once per process.
var pgCrashPoints = []string{
	"after-precommit:1",
	"after-precommit:3",
	"after-precommit:10",
	"after-persist:1",
	"after-persist:3",
	"before-endtxn:1",
	"before-endtxn:3",
	"before-endtxn:10",
	"between-commits:1",
	"between-commits:3",
	"during-restore:1",
}

// TestPostgresExactlyOnceAtEveryCrashPoint: TestExactlyOnceAtEveryCrashPoint
// with the PostgreSQL sink. A job started with CONNECTOR_CRASH_AT=<point>
// dies by SIGKILL there, for every point the sink reaches, while ids keep
// coming: once after a clean stop (steady state), once straight after the
// previous crash (so before-endtxn also lands in a start's rewrite of the
// transactions the previous crash left uncommitted). A crash where the
// checkpoint is durable and a transaction is not yet committed
// (after-persist, before-endtxn, between-commits) must make the next start
// write that transaction again from its spool: the test requires its
// "postgres sink recovered" line to say so. In the end a run without crash
// point drains the topic; the table holds every id once and nothing of the
// job is left open in the database.
func TestPostgresExactlyOnceAtEveryCrashPoint(t *testing.T) {
	const perPoint = 30 * time.Second
	b := cluster(t)
	j := newPGJob(t, b, jobSpec{Parallelism: 4, Partitions: 4, Interval: 200 * time.Millisecond},
		pgDatabase(t, pgTableDDL), "t", nil)
	// Runs until stopped: 10M ids at 2,000 ids/s last longer than the test.
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})

	var hit []string
	crashed := map[*proc]string{} // run -> the point it died at
	for _, afterCleanStop := range []bool{true, false} {
		for _, point := range pgCrashPoints {
			if afterCleanStop {
				p := j.start()
				j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, 30*time.Second)
				j.terminate(p, time.Minute)
			}
			if j.crashAt(point, perPoint) {
				hit = append(hit, point)
				crashed[j.runs[len(j.runs)-1]] = point
			}
		}
	}

	n := prod.stop(t, time.Minute)
	p := j.start()
	j.waitForRows(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)

	// What each start after a crash found to write again.
	for i, r := range j.runs[:len(j.runs)-1] {
		point, ok := crashed[r]
		if !ok {
			continue
		}
		next := j.runs[i+1]
		lines := logLines[recovered](j.job, msgPGRecovered, next)
		if len(lines) == 0 && strings.HasPrefix(crashed[next], "before-endtxn:") {
			// It died before COMMIT of a transaction it was writing
			// again from the spool: that one was not committed either.
			t.Logf("%s, after the crash at %s: died writing a transaction again from the spool (%d written before)",
				next, point, j.logCount(msgPGRewritten, next))
			continue
		}
		if len(lines) != 1 {
			j.errorf(next, "%s, after the crash at %s: %d %q log lines, want 1", next, point, len(lines), msgPGRecovered)
			continue
		}
		rc := lines[0]
		name, _, _ := strings.Cut(point, ":")
		switch name {
		case "after-persist": // every restored transaction is uncommitted
			if rc.WrittenAgain != rc.Restored {
				j.errorf(next, "%s, after the crash at %s: restored %d transactions and wrote %d again, want all of them", next, point, rc.Restored, rc.WrittenAgain)
			}
		case "before-endtxn", "between-commits": // at least the one not committed
			if rc.WrittenAgain < 1 {
				j.errorf(next, "%s, after the crash at %s: wrote %d transactions again (of %d restored), want at least 1", next, point, rc.WrittenAgain, rc.Restored)
			}
		}
		t.Logf("%s, after the crash at %s: restored %d transactions, wrote %d again from the spool", next, point, rc.Restored, rc.WrittenAgain)
	}

	j.requireRowsExactlyOnce(n, len(hit), fmt.Sprintf("crash_points=%d transactions_written_again=%d", len(hit), j.logCount(msgPGRewritten)))
	j.requireNothingLeftOpen()
}

// recovered is the sink's "postgres sink recovered" log line of a start:
// how many transactions the restored checkpoint held, and how many of them
// it wrote again from their spool files (the rest were committed).
type recovered struct {
	Restored     int `json:"restored_transactions"`
	WrittenAgain int `json:"written_again"`
}
