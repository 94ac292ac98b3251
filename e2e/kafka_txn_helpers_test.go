package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// The job's transactions, as the brokers describe them

// jobTxns describes every transactional id of the job that the brokers
// know (<job>-w<w>-t<slot> and <job>-w<w>-r).
func (j *job) jobTxns() map[string]kadm.DescribedTransaction {
	j.t.Helper()
	adm := kafkatest.Admin(j.t, j.brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		j.t.Fatalf("list transactions: %v", err)
	}
	var ids []string
	for _, l := range listed.Sorted() {
		if strings.HasPrefix(l.TxnID, j.name+"-w") {
			ids = append(ids, l.TxnID)
		}
	}
	out := map[string]kadm.DescribedTransaction{}
	if len(ids) == 0 {
		return out
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		j.t.Fatalf("describe transactions %v: %v", ids, err)
	}
	for id, d := range described {
		if d.Err != nil {
			j.t.Fatalf("describe transaction %s: %v", id, d.Err)
		}
		out[id] = d
	}
	return out
}

// openTxn reports whether the broker holds d's transaction open.
func openTxn(d kadm.DescribedTransaction) bool {
	switch d.State {
	case "Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
		return true
	}
	return false
}

func describeTxn(d kadm.DescribedTransaction) string {
	s := fmt.Sprintf("%s %s (producer %d epoch %d", d.TxnID, d.State, d.ProducerID, d.ProducerEpoch)
	if d.StartTimestamp > 0 {
		s += fmt.Sprintf(", began %s", time.UnixMilli(d.StartTimestamp).Format("15:04:05.000"))
	}
	return s + ")"
}

// txnState is a transactional id as `connector txns list --json` prints it.
type txnState struct {
	ID         string        `json:"id"`
	Writer     int           `json:"writer"`
	State      string        `json:"state"`
	ProducerID int64         `json:"producer_id"`
	Epoch      int16         `json:"epoch"`
	Age        time.Duration `json:"age_ns"`
	Timeout    time.Duration `json:"timeout_ns"`
	Partitions []string      `json:"partitions"`
	Checkpoint uint64        `json:"checkpoint"`
	Needed     bool          `json:"needed"`
	Err        string        `json:"error"`
}

// txnsList runs `connector txns list --json` on the job's latest config
// (the job must be stopped) and returns what it printed.
func (j *job) txnsList() []txnState {
	j.t.Helper()
	args := []string{"txns", "list", "--config", j.cfgPath, "--json"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, args...)
	cmd.Dir = j.dir
	cmd.Env = environWithout(envCrashAt)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		j.t.Fatalf("connector %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	var txns []txnState
	if err := json.Unmarshal(out, &txns); err != nil {
		j.t.Fatalf("connector %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return txns
}

// The Kafka sink's log lines the tests look for.
const (
	// A restart (or a commit after one) produced a completed checkpoint's
	// aborted transaction again from the log.
	msgProducedAgain = "kafka sink: produced a checkpoint's transaction again from the log (it was aborted before it could be committed)"
	// Recover aborted an open transaction of the job.
	msgAbortedOpen = "kafka sink: aborted a transaction left open"
	// Recover could not reach the sink's cluster and retries.
	msgSinkUnreachable = "kafka sink: cluster unreachable at start; retrying"
)

// producedAgain is a msgProducedAgain line: the transaction Was of
// writer's output of checkpoint, produced again in a new one.
type producedAgain struct {
	Checkpoint uint64 `json:"checkpoint"`
	Writer     int    `json:"writer"`
	Records    int    `json:"records"`
	Was        string `json:"was"`
}

// logsOf returns the log lines with message of the runs (all of the job's
// if none are given).
func (j *job) logsOf(message string, runs ...*proc) []json.RawMessage {
	j.t.Helper()
	return logLines[json.RawMessage](j, message, runs...)
}

// waitLogged waits until p logged message at least n times; it fails the
// test when p ends first or timeout passes.
func (j *job) waitLogged(p *proc, message string, n int, timeout time.Duration) {
	j.t.Helper()
	j.pollUntil(p, timeout, 100*time.Millisecond, func() (bool, string) {
		got := len(j.logsOf(message, p))
		return got >= n, fmt.Sprintf("%d of %d %q lines", got, n, message)
	})
}

// openTxnStarts returns, for every partition of topic that open
// transactions hold, the first offsets of the earliest and of the latest
// of them (kadm DescribeProducers): a read_committed consumer reads no
// further than the earliest's until it ends, and past the latest's only
// once every one of them ended.
func openTxnStarts(t testing.TB, b kafkatest.Brokers, topic string) (earliest, latest map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	described, err := kafkatest.Admin(t, b).DescribeProducers(ctx, kadm.TopicsSet{topic: nil})
	if err != nil {
		t.Fatalf("describe producers of %s: %v", topic, err)
	}
	earliest, latest = map[int32]int64{}, map[int32]int64{}
	for _, p := range described.SortedPartitions() {
		if p.Err != nil {
			t.Fatalf("describe producers of %s/%d: %v", topic, p.Partition, p.Err)
		}
		for _, d := range p.ActiveProducers {
			start := d.CurrentTxnStartOffset
			if start < 0 {
				continue
			}
			if s, ok := earliest[p.Partition]; !ok || start < s {
				earliest[p.Partition] = start
			}
			latest[p.Partition] = max(latest[p.Partition], start)
		}
	}
	return earliest, latest
}

// txnRef is a transaction a checkpoint's committable names: the Kafka
// sink's segment (its transactional id, producer id and epoch).
type txnRef struct {
	Writer     int
	Checkpoint uint64
	TxnID      string
	ProducerID int64
	Epoch      int16
}

// checkpointTxns returns the transactions that the newest restorable
// checkpoint's committables name, from `connector checkpoints show`
// (the job must be stopped).
func (j *job) checkpointTxns() []txnRef {
	j.t.Helper()
	out, err := j.command(30*time.Second, "checkpoints", "show", "--config", j.cfgPath)
	if err != nil {
		j.t.Fatalf("connector checkpoints show --config %s: %v\n%s", j.cfgPath, err, out)
	}
	refs, err := parseCheckpointTxns(out)
	if err != nil {
		j.t.Fatalf("connector checkpoints show: %v\n%s", err, out)
	}
	return refs
}

// parseCheckpointTxns finds the Kafka sink's committables in the output of
// `connector checkpoints show`, ordered by checkpoint and writer. That
// output's shape is not fixed, so it looks for them anywhere in the JSON
// tree: objects with "checkpoint", "writer" and a "data" object holding
// "txn", "pid" and "epoch".
func parseCheckpointTxns(out []byte) ([]txnRef, error) {
	var root any
	if err := json.Unmarshal(out, &root); err != nil {
		return nil, err
	}
	var refs []txnRef
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if data, ok := v["data"].(map[string]any); ok {
				txn, okT := data["txn"].(string)
				pid, okP := data["pid"].(float64)
				epoch, okE := data["epoch"].(float64)
				cp, okC := v["checkpoint"].(float64)
				w, okW := v["writer"].(float64)
				if okT && okP && okE && okC && okW {
					refs = append(refs, txnRef{Writer: int(w), Checkpoint: uint64(cp), TxnID: txn, ProducerID: int64(pid), Epoch: int16(epoch)})
					return
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(root)
	slices.SortFunc(refs, func(a, b txnRef) int {
		if a.Checkpoint != b.Checkpoint {
			return int(int64(a.Checkpoint) - int64(b.Checkpoint))
		}
		return a.Writer - b.Writer
	})
	return refs, nil
}
