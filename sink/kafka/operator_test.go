package kafka

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/sink"
)

func TestTransactionalIDsOfAJobAreTold(t *testing.T) {
	for id, want := range map[string]int{
		"orders-w0-t0": 0, "orders-w12-t3": 12, "orders-w1-r": 1,
		"orders-w1-w0-t0": -1, // job orders-w1's
		"orders-w01-t0":   -1, "orders-w1-t": -1, "orders-w1-x": -1, "orders-w-t0": -1, "order-w0-t0": -1, "orders-w1-t0x": -1,
	} {
		w, ok := parseTxnID("orders", id)
		if (want >= 0) != ok || (ok && w != want) {
			t.Errorf("parseTxnID(orders, %s) = %d, %v; want %d", id, w, ok, want)
		}
	}
	if _, ok := parseTxnID("orders-w1", "orders-w1-w0-t0"); !ok {
		t.Error("job orders-w1 does not own orders-w1-w0-t0")
	}
}

// TestOperatorListsAbortsAndCommitsLingeringTransactions: a process died
// with two transactions open: checkpoint 1's (completed: its metadata
// names it) and checkpoint 2's (never completed). The list shows both,
// the first as needed; aborting it is refused; committing it makes its
// records visible once; aborting the second leaves its records invisible
// and no transaction open.
func TestOperatorListsAbortsAndCommitsLingeringTransactions(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 30)
	completed := preCommit(t, w, 1)
	write(t, w, 30, 50)
	preCommit(t, w, 2)
	// The process dies here: checkpoint 1 is durable, not committed.

	op := testSink(t, b, topic, topic, nil)
	txns, err := op.Transactions(ctx, completed)
	if err != nil {
		t.Fatal(err)
	}
	needed, other := txnOf(t, completed[0]), ""
	for _, x := range txns {
		if x.Open() && x.ID != needed {
			other = x.ID
		}
	}
	byID := map[string]TxnState{}
	for _, x := range txns {
		byID[x.ID] = x
	}
	if n := byID[needed]; !n.Open() || !n.Needed || n.Checkpoint != 1 || n.Writer != 0 || len(n.Partitions) == 0 || n.Timeout != s.cfg.TransactionTimeout {
		t.Errorf("the transaction of completed checkpoint 1: %+v; want open, needed by checkpoint 1, with partitions and the configured timeout", n)
	}
	if o := byID[other]; other == "" || o.Needed || o.Checkpoint != 0 {
		t.Fatalf("the transaction of checkpoint 2: %+v (of %+v); want open and not needed", o, txns)
	}

	if _, err := op.AbortTxn(ctx, completed, needed); err == nil || !strings.Contains(err.Error(), "aborting is refused") {
		t.Errorf("abort of a needed transaction: %v; want a refusal", err)
	}
	if _, err := op.CommitTxn(ctx, completed, other); err == nil || !strings.Contains(err.Error(), "nothing to commit") {
		t.Errorf("commit of a transaction no completed checkpoint needs: %v; want a refusal", err)
	}
	if _, err := op.AbortTxn(ctx, completed, "someone-else-w0-t0"); err == nil {
		t.Error("abort of another job's transactional id succeeded")
	}
	if _, err := op.CommitTxn(ctx, completed, needed); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if _, err := op.AbortTxn(ctx, completed, other); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if got := committedValues(t, b, topic, 30); !slices.Equal(got, values(0, 30)) {
		t.Fatalf("visible: %d records, want checkpoint 1's 30 once", len(got))
	}
	after, err := op.Transactions(ctx, completed)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range after {
		if x.Open() || x.Needed {
			t.Errorf("after commit and abort: %+v", x)
		}
	}
	// A restart now finds checkpoint 1 committed and produces nothing again.
	recover_(t, testSink(t, b, topic, topic, nil), completed)
	if got := committedValues(t, b, topic, 30); !slices.Equal(got, values(0, 30)) {
		t.Fatalf("visible after a restart: %d records, want 30 once", len(got))
	}
}

// TestTxnsCommitGoesInCheckpointOrder: checkpoint 1 failed (its
// transaction carried), checkpoint 2 completed, and the process died
// before committing: the restorable checkpoint 2 names two open
// transactions of writer 0, both needed. `txns commit` of checkpoint 2's
// first is refused, naming checkpoint 1's: it wrote the writer's progress
// marker 2, after which checkpoint 1's records counted as committed,
// could be aborted, and no restart made them visible. In order, both
// commit, and a restart after shows each record once.
func TestTxnsCommitGoesInCheckpointOrder(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 10)
	preCommit(t, w, 1) // checkpoint 1 fails: carried
	write(t, w, 10, 20)
	cs := preCommit(t, w, 2) // checkpoint 2 completes; the process dies
	if len(cs) != 2 {
		t.Fatalf("%d committables, want checkpoint 1's carried and checkpoint 2's", len(cs))
	}
	first, second := txnOf(t, cs[0]), txnOf(t, cs[1])
	if cs[0].Checkpoint > cs[1].Checkpoint {
		first, second = second, first
	}

	op := testSink(t, b, topic, topic, nil)
	if _, err := op.CommitTxn(ctx, cs, second); err == nil || !strings.Contains(err.Error(), "commit "+first+" first") {
		t.Fatalf("commit of checkpoint 2's transaction before checkpoint 1's: %v, want a refusal naming %s", err, first)
	}
	txns, err := op.Transactions(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range txns {
		if (x.ID == first || x.ID == second) && (!x.Open() || !x.Needed) {
			t.Fatalf("after the refusal %s is open %v, needed %v; want both transactions open and needed", x.ID, x.Open(), x.Needed)
		}
	}
	for _, id := range []string{first, second} {
		if _, err := op.CommitTxn(ctx, cs, id); err != nil {
			t.Fatalf("commit of %s: %v", id, err)
		}
	}
	if got := committedValues(t, b, topic, 20); !slices.Equal(got, values(0, 20)) {
		t.Fatalf("visible after both commits: %d records, want the 20", len(got))
	}
	recover_(t, testSink(t, b, topic, topic, nil), cs)
	if got := committedValues(t, b, topic, 20); !slices.Equal(got, values(0, 20)) {
		t.Fatalf("visible after a restart from checkpoint 2: %d records, want the 20 once each", len(got))
	}
}

// TestReadingASegmentBackRefusedIsNotOutputLost: reading a transaction
// back that the cluster refuses to the job's principal is its config
// (ErrInvalidConfig), not pre-committed output lost (ErrCommitLost, which
// says data is gone); records deleted by retention are.
func TestReadingASegmentBackRefusedIsNotOutputLost(t *testing.T) {
	refused := readBackFailed(fmt.Errorf("read back transaction x from out/0: %w", kerr.TopicAuthorizationFailed))
	if !errors.Is(refused, sink.ErrInvalidConfig) || errors.Is(refused, sink.ErrCommitLost) || !errors.Is(refused, kerr.TopicAuthorizationFailed) {
		t.Errorf("a refused read: %v, want ErrInvalidConfig with its cause", refused)
	}
	if gone := readBackFailed(kerr.OffsetOutOfRange); !errors.Is(gone, sink.ErrCommitLost) {
		t.Errorf("a read of records deleted by retention: %v, want ErrCommitLost", gone)
	}
}
