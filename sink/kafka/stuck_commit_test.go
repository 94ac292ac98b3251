package kafka

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestACommitTheBrokerKeepsPuttingOffEndsWithItsContext: the broker answers
// every EndTxn with CONCURRENT_TRANSACTIONS (a coordinator that cannot
// finish the transaction's previous state change), which franz-go retries
// for as long as the context lasts. Commit returns when its context ends,
// with an error (the runtime bounds it: pipeline's commitBound), and a
// restart's Recover commits the checkpoint once the broker answers again:
// every record once.
func TestACommitTheBrokerKeepsPuttingOffEndsWithItsContext(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var stuck atomic.Bool
	var putOff atomic.Int64
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !stuck.Load() {
			return nil, nil, false
		}
		putOff.Add(1)
		resp := req.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil, true
	})
	b := kafkatest.Brokers{Addrs: c.ListenAddrs()}
	topic := kafkatest.Topic(t, b, 3)
	s := testSink(t, b, topic, topic, nil)
	recover_(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 30)
	cs := preCommit(t, w, 1)

	stuck.Store(true)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Commit(cctx, cs) }()
	select {
	case err := <-done:
		// franz-go returns the last CONCURRENT_TRANSACTIONS when the context
		// ends in its backoff, and the context's error when it ends during
		// a request: which one depends on where the deadline lands.
		if err == nil || !(errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, context.DeadlineExceeded)) {
			t.Fatalf("Commit while the broker puts EndTxn off: %v; want CONCURRENT_TRANSACTIONS or the context's deadline", err)
		}
		if cctx.Err() == nil {
			t.Fatalf("Commit returned %v before its context ended; it should retry until then", err)
		}
		if putOff.Load() < 2 {
			t.Fatalf("the broker put EndTxn off %d times; the commit should have retried until its context ended", putOff.Load())
		}
		t.Logf("Commit returned after its context ended (EndTxn put off %d times): %v", putOff.Load(), err)
	case <-time.After(30 * time.Second):
		t.Fatal("Commit still waits 30 s after its 1 s context ended")
	}
	if got := committedValues(t, b, topic, 0); len(got) != 0 {
		t.Fatalf("%d records visible while the commit was put off; want none", len(got))
	}

	// The restart, once the broker answers again.
	stuck.Store(false)
	s2 := testSink(t, b, topic, topic, nil)
	recover_(t, s2, cs)
	if got := committedValues(t, b, topic, 30); !slices.Equal(got, values(0, 30)) {
		t.Fatalf("visible after recovery: %d records (%v), want 30 once", len(got), got)
	}
}
