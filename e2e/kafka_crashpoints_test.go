package e2e

import (
	"fmt"
	"testing"
	"time"
)

// kafkaCrashPoints are the CONNECTOR_CRASH_AT values a job with a Kafka
// sink meets, the first hit of each and later ones. Counts are per process;
// with 4 workers, after-precommit and after-flush are hit about 4 times per
// checkpoint, before-endtxn once per writer's commit (and once per
// transaction a restart produces again), between-commits 3 times per
// checkpoint, after-persist once; during-restore once per process, so only
// its first hit exists. Where each sits:
//
//   - after-flush: a writer's records are all acknowledged, its transaction
//     is open and has no progress marker yet;
//   - after-precommit: the transaction has its marker, the worker has not
//     acknowledged the checkpoint;
//   - after-persist: the checkpoint is durable, no transaction of it is
//     committed;
//   - before-endtxn: about to commit one writer's transaction of a durable
//     checkpoint (or one a restart produces again from the log);
//   - between-commits: one writer's transaction of the checkpoint is
//     committed, the next is not;
//   - during-restore: the sink has recovered (aborted, produced again),
//     the state is restored and the source open, nothing is read yet.
var kafkaCrashPoints = []string{
	"after-flush:1",
	"after-flush:6",
	"after-precommit:1",
	"after-precommit:10",
	"after-persist:1",
	"after-persist:3",
	"before-endtxn:1",
	"before-endtxn:3",
	"before-endtxn:10",
	"between-commits:1",
	"between-commits:4",
	"during-restore:1",
}

// TestKafkaSinkExactlyOnceAtEveryCrashPoint: a job writing to a Kafka
// topic dies by SIGKILL at every crash point while ids keep coming, each
// point met twice: once after a clean stop (a run without crash point that
// completes a checkpoint and exits 0 on SIGTERM), so the crash happens in
// steady state; and once straight after the previous crash, so it may
// happen while recovering from that one (before-endtxn while a restart
// produces again what after-persist left, for example). In the end a run
// without crash point drains the topic: a read_committed consumer reads
// every id exactly once, and the group's committed offsets are the ends of
// the input. A crash after a checkpoint's metadata and before its commits
// (after-persist, before-endtxn, between-commits) leaves a completed
// checkpoint's transactions uncommitted, which the next run must produce
// again from the log: that happened at least once.
func TestKafkaSinkExactlyOnceAtEveryCrashPoint(t *testing.T) {
	const perPoint = 30 * time.Second
	b := cluster(t)
	// Parallelism 4: four writers, so a checkpoint's commit ends four
	// transactions and between-commits has a moment to hit.
	j := newJob(t, b, jobSpec{Parallelism: 4, Partitions: 4, Interval: 200 * time.Millisecond, KafkaSink: &kafkaSinkSpec{}})
	// Runs until stopped: the points need records flowing. At 2,000 ids/s
	// 10M ids last 80 minutes, longer than any run of this test may take.
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})

	var hit []string
	for _, afterCleanStop := range []bool{true, false} {
		for _, point := range kafkaCrashPoints {
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
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	again := len(j.logsOf(msgProducedAgain))
	j.requireExactlyOnce(n, len(hit), fmt.Sprintf("crash_points=%d produced_again=%d", len(hit), again))
	j.requireGroupAtInputEnd()
	if again == 0 {
		t.Errorf("no run produced a completed checkpoint's transaction again from the log (%q), though after-persist left some uncommitted", msgProducedAgain)
	}
}
