package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKafkaSinkRestartEndsALingeringTransactionAtOnce: a job writing to a
// Kafka topic dies at after-flush (a writer's records are all acknowledged
// by the broker; its transaction is open and carries no progress marker)
// and leaves that transaction open: with the sink's transaction_timeout of
// 10 minutes the broker would keep it open, and every read_committed
// consumer of the output stuck at its first offset, for that long. While
// the job is down:
//
//   - `connector txns list --config` shows it: state Ongoing, its age, the
//     output partitions it holds;
//   - the output's last stable offset (what read_committed consumers can
//     read up to) is the transaction's first offset in every partition it
//     holds (kadm DescribeProducers).
//
// The restart aborts it at once, before it writes anything: the last
// stable offset of each of those partitions passes the first offset of
// every transaction open there within 30 s of the restart's start (a bound
// for loaded CI machines; it takes well under a second here), the restart
// logs the abort of every transactional id the listing showed open, and
// once the restart has completed a checkpoint no transaction of the job
// that began before the restart is open. Then it drains: every id once,
// the group at the ends.
func TestKafkaSinkRestartEndsALingeringTransactionAtOnce(t *testing.T) {
	const bound = 30 * time.Second
	b := cluster(t)
	j := newJob(t, b, jobSpec{Parallelism: 2, KafkaSink: &kafkaSinkSpec{}})
	// Runs until stopped: the crash needs records flowing (10M ids would
	// last 80 minutes).
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})
	// Two writers hit after-flush about once per checkpoint each: :5 is a
	// few checkpoints in.
	if !j.crashAt("after-flush:5", 30*time.Second) {
		t.FailNow()
	}

	var lingering []txnState
	for _, tx := range j.txnsList() {
		t.Logf("txns list: %s %s age=%v timeout=%v checkpoint=%d needed=%v partitions=%v",
			tx.ID, tx.State, tx.Age.Round(time.Millisecond), tx.Timeout, tx.Checkpoint, tx.Needed, tx.Partitions)
		if tx.State == "Ongoing" && len(tx.Partitions) > 0 {
			lingering = append(lingering, tx)
			if tx.Age <= 0 {
				t.Errorf("txns list: %s is Ongoing with age %v, want its age", tx.ID, tx.Age)
			}
			if tx.Timeout != 10*time.Minute {
				t.Errorf("txns list: %s has timeout %v, want sink.transaction_timeout's default 10m", tx.ID, tx.Timeout)
			}
		}
	}
	if len(lingering) == 0 {
		t.Fatalf("connector txns list shows no Ongoing transaction holding output partitions after a crash at after-flush")
	}

	blocked, last := openTxnStarts(t, b, j.outTopic)
	ends, lso, err := stableOffsets(t, b, j.outTopic)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocked) == 0 {
		t.Fatalf("no output partition is held by an open transaction (DescribeProducers) after a crash at after-flush")
	}
	for p, start := range blocked {
		if lso[p] != start {
			t.Errorf("partition %d: last stable offset %d, want the lingering transaction's first offset %d", p, lso[p], start)
		}
	}
	t.Logf("while down: open transactions hold output partitions from %v, the last of them from %v (last stable offsets %v, ends %v)",
		sorted(blocked), sorted(last), sorted(lso), sorted(ends))

	restart := time.Now()
	p := j.start()
	var took time.Duration
	for {
		_, lso, err := stableOffsets(t, b, j.outTopic)
		if err != nil {
			t.Fatal(err)
		}
		passed := true
		for part, start := range last {
			passed = passed && lso[part] > start
		}
		if passed {
			took = time.Since(restart)
			break
		}
		j.requireRunning(p, "waiting for the last stable offsets to pass the lingering transactions")
		if time.Since(restart) > 2*bound {
			j.fatalf(p, "%v after the restart began the last stable offsets %v have not passed the lingering transactions' first offsets %v", 2*bound, sorted(lso), sorted(last))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("restart: read_committed consumers unblocked %v after the restart began", took.Round(time.Millisecond))
	if took > bound {
		t.Errorf("restart: the lingering transactions blocked read_committed consumers %v after the restart began, want under %v", took.Round(time.Millisecond), bound)
	}

	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, 30*time.Second)
	// The restart logged its aborts before its first checkpoint.
	var aborted []string
	for _, l := range logLines[struct {
		Txn string `json:"txn"`
	}](j, msgAbortedOpen, p) {
		aborted = append(aborted, l.Txn)
	}
	for _, tx := range lingering {
		if !slices.Contains(aborted, tx.ID) {
			j.errorf(p, "%s did not log %q for %s (it logged it for %v)", p, msgAbortedOpen, tx.ID, aborted)
		}
	}

	var open []string
	for _, d := range j.jobTxns() {
		if openTxn(d) && d.StartTimestamp < restart.UnixMilli() {
			open = append(open, describeTxn(d))
		}
	}
	if len(open) > 0 {
		slices.Sort(open)
		j.errorf(p, "after the restart's first checkpoint, transactions that began before the restart (%s) are still open: %s",
			restart.Format("15:04:05.000"), strings.Join(open, "; "))
	}

	n := prod.stop(t, time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 1, fmt.Sprintf("lingering_txns=%d unblocked_after=%v", len(lingering), took.Round(time.Millisecond)))
	j.requireGroupAtInputEnd()
}
