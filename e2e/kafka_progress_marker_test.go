package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// msgMarkerGone is the Kafka sink's warning that the log shows a
// checkpoint's transaction committed while its writer's progress marker
// does not.
const msgMarkerGone = "kafka sink: the log shows a checkpoint's transaction committed but its progress marker is gone (the group expired or was deleted); not producing it again"

// TestKafkaSinkRestartReadsProgressMarkersThatACrashLeftPending: a job
// writing to a Kafka topic writes a first batch of ids and stops on
// SIGTERM: its final checkpoint f holds every writer's transaction of that
// batch, committed, and every writer's progress marker says f. A second
// run restores f, writes a second batch and dies at after-precommit: its
// transactions are open, each holding its writer's marker for the next
// checkpoint, uncommitted. Then the output topic's retention deletes what
// consumers have long read: every record below the open transactions
// (kadm DeleteRecords up to the last stable offset), that is all of f's
// output.
//
// The third run must read the markers as they are: f committed, so
// nothing of f is to be produced again nor read back from the log (where
// it is gone). A marker pending in an open transaction makes a stable read
// of its group answer UNSTABLE_OFFSET_COMMIT until that transaction ends:
// the run must wait for it, or end the transaction first, and not take it
// for a missing marker. So: no warning that a progress group expired (none
// did), no in-process restart, and after the drain the output holds the
// second batch exactly once and nothing of the first (deleted).
//
// The first run takes one checkpoint at its start (checkpoint.initial_delay
// 0s) and no other (checkpoint.interval 1h) until its final one, and the
// first batch is produced only after that first checkpoint: so f is the
// checkpoint that holds the whole batch.
func TestKafkaSinkRestartReadsProgressMarkersThatACrashLeftPending(t *testing.T) {
	const n1, n2 = 4_000, 8_000
	b := cluster(t)
	j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2, KafkaSink: &kafkaSinkSpec{}, Interval: time.Hour,
		Config: map[string]map[string]any{"checkpoint": {"initial_delay": "0s"}}})
	p := j.start()
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, time.Minute)
	produceIDs(t, b, j.topic, 0, n1, false)
	j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v >= n1 }, 50*time.Millisecond, time.Minute)
	j.terminate(p, time.Minute)
	if cps, err := p.metric(metricCheckpoints); err == nil {
		t.Logf("%s: %v checkpoints completed before the final one", p, cps)
	}

	j.spec.Interval = 300 * time.Millisecond
	delete(j.spec.Config, "checkpoint")
	produceIDs(t, b, j.topic, n1, n2, false)
	if !j.crashAt("after-precommit:1", 30*time.Second) {
		t.FailNow()
	}
	_, lso, err := stableOffsets(t, b, j.outTopic)
	if err != nil {
		t.Fatal(err)
	}
	deleteRecordsBelow(t, b, j.outTopic, lso)

	p = j.start()
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job in process %d times (first: %s), want none: f's output is committed, nothing needs reading back", p, len(errs), errs[0])
	}
	if gone := j.logsOf(msgMarkerGone, p); len(gone) > 0 {
		j.errorf(p, "%s warned %d times that a progress marker is gone (first: %s); no progress group expired or was deleted", p, len(gone), gone[0])
	}

	out, err := j.out.readAll()
	if err != nil {
		t.Fatal(err)
	}
	var first, dups, missing int
	for id, c := range out.counts {
		switch {
		case id < n1:
			first += c
		case c > 1:
			dups += c - 1
		}
	}
	for id := int64(n1); id < n2; id++ {
		if out.counts[id] == 0 {
			missing++
		}
	}
	t.Logf("second batch: %d ids, duplicates=%d missing=%d; first batch (deleted) records=%d; runs=%d", n2-n1, dups, missing, first, len(j.runs))
	if dups+missing+first+len(out.bad) > 0 {
		t.Errorf("want the second batch [%d, %d) exactly once and nothing else: duplicates=%d missing=%d first-batch records=%d bad=%d",
			n1, n2, dups, missing, first, len(out.bad))
	}
	j.requireGroupAtInputEnd()
}

// deleteRecordsBelow deletes every record of topic below the given offset
// of each partition (what retention does to old records).
func deleteRecordsBelow(t testing.TB, b kafkatest.Brokers, topic string, below map[int32]int64) {
	t.Helper()
	offs := kadm.Offsets{}
	for p, o := range below {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resps, err := kafkatest.Admin(t, b).DeleteRecords(ctx, offs)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		t.Fatalf("delete records of %s below %v: %v", topic, sorted(below), err)
	}
	t.Logf("deleted the records of %s below %v", topic, sorted(below))
}
