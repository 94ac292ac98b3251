package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Jobs on the tight broker (broker_helpers_test.go: transaction.max.timeout.ms
// 10000, timed-out transactions looked for every 500 ms) take these: a
// transaction the broker aborts 6 s after it began, longer than a
// checkpoint may take (checkpoint.timeout must be below the transaction
// timeout).
var tightTimeouts = map[string]map[string]any{
	"checkpoint": {"timeout": "5s"},
	"sink":       {"transaction_timeout": "6s"},
}

// TestKafkaSinkTransactionTheBrokerAbortedOnTimeoutWhileDownIsWrittenAgain:
// on a broker whose transaction.max.timeout.ms is 10 s (the tight broker;
// the job's sink.transaction_timeout is 6 s), a job writing to a Kafka
// topic is killed after a checkpoint completed and before its transactions
// were committed: at after-persist (the checkpoint's metadata durable, no
// EndTxn sent) and at before-endtxn (about to commit one writer's
// transaction; those of the writers before it may be committed). The
// uncommitted transactions that the checkpoint's committables name
// (`connector checkpoints show`) hold its output, and no process is left
// to commit them. The test waits, on the broker's word and not a guess at
// time, until kadm DescribeTransactions shows each of them CompleteAbort
// (the broker aborted it on timeout) and only then restarts the job. The
// restart produces each of those transactions again from the log (it
// logs so for each, by transactional id), and after a drain a
// read_committed consumer reads every id exactly once: the broker's abort
// lost nothing.
func TestKafkaSinkTransactionTheBrokerAbortedOnTimeoutWhileDownIsWrittenAgain(t *testing.T) {
	b := tightCluster(t)
	// With 2 writers before-endtxn is hit up to twice per checkpoint: :3
	// is a commit of the second or third checkpoint.
	for _, point := range []string{"after-persist:3", "before-endtxn:3"} {
		t.Run(strings.ReplaceAll(point, ":", "-"), func(t *testing.T) {
			j := newJob(t, b, jobSpec{Parallelism: 2, KafkaSink: &kafkaSinkSpec{}, Config: tightTimeouts})
			// Runs until stopped (10M ids would last 80 minutes).
			prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})
			if !j.crashAt(point, 30*time.Second) {
				t.FailNow()
			}
			crashed := j.runs[0].ended

			// The transactions of the restorable checkpoint that the crash
			// left uncommitted: all of them at after-persist; at
			// before-endtxn those of the writers after the one whose commit
			// was cut, too (the writers before it may have committed).
			refs := j.checkpointTxns()
			newest := uint64(0)
			for _, r := range refs {
				newest = max(newest, r.Checkpoint)
			}
			at := j.jobTxns()
			var needed []txnRef
			for _, r := range refs {
				if r.Checkpoint != newest {
					continue
				}
				d := at[r.TxnID]
				t.Logf("checkpoint %d, writer %d: transaction %s (producer %d epoch %d), now %s",
					r.Checkpoint, r.Writer, r.TxnID, r.ProducerID, r.Epoch, describeTxn(d))
				if d.State == "CompleteCommit" && d.ProducerID == r.ProducerID {
					continue // committed before the crash
				}
				needed = append(needed, r)
			}
			if len(needed) == 0 {
				t.Fatalf("the restorable checkpoint %d names no uncommitted Kafka transaction (`connector checkpoints show`: %d committables)", newest, len(refs))
			}

			// The broker aborts them on timeout: wait for its word.
			deadline := time.Now().Add(time.Minute)
			for {
				txns := j.jobTxns()
				var pending []string
				for _, r := range needed {
					d, ok := txns[r.TxnID]
					switch {
					case !ok:
						t.Fatalf("the brokers no longer know transactional id %s", r.TxnID)
					case d.ProducerID != r.ProducerID:
						t.Fatalf("%s: producer id %d, want the checkpoint's %d: something else initialised the id", describeTxn(d), d.ProducerID, r.ProducerID)
					case d.State == "CompleteCommit" || d.State == "PrepareCommit":
						t.Fatalf("%s: committed, though the process died before it sent EndTxn", describeTxn(d))
					case d.State != "CompleteAbort":
						pending = append(pending, describeTxn(d))
					}
				}
				if len(pending) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after the crash the broker has not aborted on timeout: %s", strings.Join(pending, "; "))
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("the broker aborted the checkpoint's %d transactions on timeout within %v of the crash", len(needed), time.Since(crashed).Round(time.Millisecond))

			p := j.start()
			j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, time.Minute)
			// The restart produced them again during its recovery, before
			// its first checkpoint.
			again := logLines[producedAgain](j, msgProducedAgain, p)
			for _, r := range needed {
				if !slices.ContainsFunc(again, func(a producedAgain) bool {
					return a.Checkpoint == r.Checkpoint && a.Writer == r.Writer && a.Was == r.TxnID
				}) {
					j.errorf(p, "%s did not produce checkpoint %d's transaction %s of writer %d again (%q lines: %+v)",
						p, r.Checkpoint, r.TxnID, r.Writer, msgProducedAgain, again)
				}
			}

			n := prod.stop(t, time.Minute)
			j.waitCheckpointAtEnd(p, 2*time.Minute)
			j.terminate(p, time.Minute)
			j.requireExactlyOnce(n, 1, fmt.Sprintf("aborted_on_timeout=%d produced_again=%d", len(needed), len(again)))
			j.requireGroupAtInputEnd()
		})
	}
}

// TestKafkaSinkTransactionTimeoutAboveTheBrokersMaximumIsRefused: a job
// whose sink.transaction_timeout (20s) is above the brokers'
// transaction.max.timeout.ms (10 s on the tight broker) stops at start
// with exit status 2 (an invalid sink config: not retried) and an error
// naming both, before it initialises any transactional id or writes
// anything.
func TestKafkaSinkTransactionTimeoutAboveTheBrokersMaximumIsRefused(t *testing.T) {
	b := tightCluster(t)
	j := newJob(t, b, jobSpec{KafkaSink: &kafkaSinkSpec{}, Config: map[string]map[string]any{
		"checkpoint": {"timeout": "5s"},
		"sink":       {"transaction_timeout": "20s"},
		"restart":    {"initial_backoff": "100ms"},
	}})
	produceIDs(t, b, j.topic, 0, 100, false)
	p := j.start()
	j.requireConfigFailure(p, 2*time.Minute, "sink.transaction_timeout", "20s", "transaction.max.timeout.ms", "10s")
	if txns := j.jobTxns(); len(txns) > 0 {
		t.Errorf("the brokers know %d transactional ids of the refused job, want none", len(txns))
	}
	out, err := j.out.readAll()
	if err != nil {
		t.Fatal(err)
	}
	if out.lines > 0 || len(out.bad) > 0 {
		t.Errorf("the refused job wrote %d records to its output topic, want none", out.lines+len(out.bad))
	}
}
