package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/kafkatest"
)

func TestTxnsUsageAndConfigErrors(t *testing.T) {
	fileJob, _, _ := checkpointJob(t) // sink.type: stdout
	root := t.TempDir()
	kafkaJob := writeFile(t, "kafka.yaml", fmt.Sprintf(`name: orders
kafka: {brokers: [localhost:9092]}
source: {topics: [orders]}
checkpoint: {dir: %q}
sink: {type: kafka, topic: out}
`, filepath.Join(root, "checkpoints")))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"txns"}, "usage: connector txns list"},
		{[]string{"txns", "frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"txns", "list", "--config", kafkaJob, "orders-w0-t0"}, "connector txns list: takes no TXN_ID"},
		{[]string{"txns", "abort", "--config", kafkaJob}, "connector txns abort: needs a TXN_ID"},
		{[]string{"txns", "commit", "--config", kafkaJob}, "connector txns commit: needs a TXN_ID"},
		{[]string{"txns", "list", "--config", fileJob}, "sink.type is stdout: only a kafka sink has transactions"},
		{[]string{"txns", "list", "--config", "no-such.yaml"}, "no-such.yaml"},
	} {
		code, out, errOut := call(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestRunExitsTwoWhenTheSinksSystemLacksWhatTheConfigNames: a config that
// validates but names an output topic the cluster does not have stops the
// job at once (no restarts) with exit 2 and the topic named, as a bad
// config does.
func TestRunExitsTwoWhenTheSinksSystemLacksWhatTheConfigNames(t *testing.T) {
	b := kafkatest.Fake(t)
	in := kafkatest.Topic(t, b, 1)
	root := t.TempDir()
	cfg := writeFile(t, "job.yaml", fmt.Sprintf(`name: to-nowhere
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {dir: %q}
state: {dir: %q}
sink: {type: kafka, topic: no-such-topic}
http: {addr: "127.0.0.1:0"}
restart: {max_failures: 3, initial_backoff: 10ms}
`, b.Addrs[0], in, filepath.Join(root, "checkpoints"), filepath.Join(root, "state")))
	code, _, errOut := call(t, "run", "--config", cfg)
	if code != 2 || !strings.Contains(errOut, "topic no-such-topic does not exist") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 2 and the missing topic named", code, errOut)
	}
	if strings.Contains(errOut, "restarting") {
		t.Errorf("the job restarted over a config problem:\n%s", errOut)
	}
}

// txns abort and commit refuse to run without the job's checkpoint.dir
// (a relative dir read from another directory, a volume not mounted):
// nothing would tell a transaction a completed checkpoint needs from a
// stray one. They went on, and abort took any of the job's open ones.
func TestTxnsAbortAndCommitRefuseWithoutTheCheckpointDir(t *testing.T) {
	b := kafkatest.Fake(t)
	out := kafkatest.Topic(t, b, 1)
	missing := filepath.Join(t.TempDir(), "not-here")
	job := writeFile(t, "kafka.yaml", fmt.Sprintf(`name: orders
kafka: {brokers: [%q]}
source: {topics: [orders]}
checkpoint: {dir: %q}
sink: {type: kafka, topic: %q}
`, b.Addrs[0], missing, out))
	for _, sub := range []string{"abort", "commit"} {
		code, _, errOut := call(t, "txns", sub, "--config", job, "orders-w0-t0")
		if code != exitFailure || !strings.Contains(errOut, "checkpoint.dir "+missing+" does not exist here") {
			t.Errorf("txns %s without the checkpoint dir: exit %d, stderr %q; want 1 and the dir named", sub, code, errOut)
		}
	}
}

// A newer checkpoint that cannot be restored (here its state file is
// gone) may need an open transaction that the older, restorable one does
// not name: txns abort judged against the older one alone and could abort
// that output. Under checkpoint.on_unrestorable: fail (the job refuses to
// start) abort is refused, naming the checkpoint; under fall_back (the
// job's start restores the older one and aborts the rest) it goes on,
// warned, as do list and commit.
func TestTxnsSayWhatANewerUnrestorableCheckpointMeans(t *testing.T) {
	b := kafkatest.Fake(t)
	out := kafkatest.Topic(t, b, 1)
	root := t.TempDir()
	ckptDir, stateDir := filepath.Join(root, "checkpoints"), filepath.Join(root, "state")
	st, err := store.Open(vfs.Default, ckptDir, stateDir, 3, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []checkpoint.ID{1, 2} {
		saveWithStateFile(t, st, stateDir, chk(id, "orders"))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(stateDir, "worker-0/000002.sst")); err != nil {
		t.Fatal(err)
	}
	job := func(mode string) string {
		return writeFile(t, "kafka.yaml", fmt.Sprintf(`name: orders
kafka: {brokers: [%q]}
source: {topics: [orders]}
checkpoint: {dir: %q, on_unrestorable: %s}
state: {dir: %q}
sink: {type: kafka, topic: %q}
`, b.Addrs[0], ckptDir, mode, stateDir, out))
	}
	code, _, errOut := call(t, "txns", "abort", "--config", job("fail"), "orders-w0-t0")
	if code != exitFailure || !strings.Contains(errOut, "refused: newer checkpoints cannot be restored: checkpoint 2") {
		t.Errorf("on_unrestorable fail: txns abort: exit %d, stderr %q; want 1, checkpoint 2 named", code, errOut)
	}
	warned := func(errOut string) bool {
		return strings.Contains(errOut, "WARNING: newer checkpoints cannot be restored: checkpoint 2") && strings.Contains(errOut, "judging against checkpoint 1")
	}
	if code, _, errOut := call(t, "txns", "list", "--config", job("fail")); code != 0 || !warned(errOut) {
		t.Errorf("txns list: exit %d, stderr %q; want 0 and a warning naming checkpoints 2 and 1", code, errOut)
	}
	// Past the check, abort asks the cluster, which knows no such id.
	if code, _, errOut := call(t, "txns", "abort", "--config", job("fall_back"), "orders-w0-t0"); code != exitFailure || !warned(errOut) || !strings.Contains(errOut, "know no transactional id orders-w0-t0") {
		t.Errorf("on_unrestorable fall_back: txns abort: exit %d, stderr %q; want a warning naming checkpoints 2 and 1, then the cluster's answer", code, errOut)
	}
}

// txns --dead-letters works on the dead-letter topic's transactions
// (exactly_once dead letters, any sink type): a completed checkpoint that
// names an open dead-letter transaction has it listed as needed, its abort
// refused and its commit done, as for a kafka sink's.
func TestTxnsOfTheDeadLetterTopic(t *testing.T) {
	b := kafkatest.RealCluster(t)
	dlq := kafkatest.Topic(t, b, 1)
	name := fmt.Sprintf("txns-dlq-%d", time.Now().UnixNano())
	txnID := name + ":dlq-w0-t0"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(dlq),
		kgo.TransactionTimeout(5*time.Minute)) // open for the whole test, however slow
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec, err := prod.ProduceSync(ctx, kgo.StringRecord("a dead letter")).First()
	if err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seg, _ := json.Marshal(map[string]any{"txn": txnID, "pid": pid, "epoch": epoch, "records": 1,
		"ranges": []map[string]any{{"topic": dlq, "partition": rec.Partition, "first": rec.Offset, "last": rec.Offset}}})
	committable, _ := json.Marshal(map[string]any{"checkpoint": 1, "writer": 0, "data": json.RawMessage(seg)})
	worker, _ := json.Marshal(map[string]any{"dead_letter_committables": []json.RawMessage{committable}})

	root := t.TempDir()
	ckptDir, stateDir := filepath.Join(root, "checkpoints"), filepath.Join(root, "state")
	st, err := store.Open(vfs.Default, ckptDir, stateDir, 3, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	md := chk(1, name)
	md.Tasks["worker-0"] = checkpoint.Snapshot{Data: worker}
	saveWithStateFile(t, st, stateDir, md)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	job := writeFile(t, "job.yaml", fmt.Sprintf(`name: %s
kafka: {brokers: [%q]}
source: {topics: [orders]}
checkpoint: {dir: %q}
state: {dir: %q}
pipeline: {on_decode_error: {policy: dead_letter, topic: %q}}
sink: {type: file, path: %q}
`, name, b.Addrs[0], ckptDir, stateDir, dlq, filepath.Join(root, "out")))

	if code, _, errOut := call(t, "txns", "list", "--config", job); code != exitUsage || !strings.Contains(errOut, "--dead-letters") {
		t.Errorf("txns list of a file-sink job: exit %d, stderr %q; want 2, pointing to --dead-letters", code, errOut)
	}
	code, out, errOut := call(t, "txns", "list", "--config", job, "--dead-letters")
	if code != 0 || !strings.Contains(out, txnID) || !strings.Contains(out, "1 (needed)") {
		t.Errorf("txns list --dead-letters: exit %d\nstdout:\n%s\nstderr:\n%s\nwant %s, needed by checkpoint 1", code, out, errOut, txnID)
	}
	if code, _, errOut := call(t, "txns", "abort", "--config", job, "--dead-letters", txnID); code != exitFailure || !strings.Contains(errOut, "aborting is refused") {
		t.Errorf("txns abort --dead-letters %s: exit %d, stderr %q; want it refused: checkpoint 1 needs it", txnID, code, errOut)
	}
	if code, out, errOut := call(t, "txns", "commit", "--config", job, "--dead-letters", txnID); code != 0 || !strings.Contains(out, "the output of checkpoint 1 is committed") {
		t.Errorf("txns commit --dead-letters %s: exit %d, stdout %q, stderr %q; want checkpoint 1's dead letters committed", txnID, code, out, errOut)
	}
}
