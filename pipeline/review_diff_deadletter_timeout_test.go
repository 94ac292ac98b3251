package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/sink"
)

// TestReviewDiffDeadLettersExactlyOnceOnABrokerWithALowerTxnMax: with a
// sink that is not Kafka, the dead-letter transactions' timeout is a fixed
// 10 minutes that no key configures. On brokers whose
// transaction.max.timeout.ms is below it (here 1 min), the dead-letter
// sink's Recover refuses the job for good (a config fault pointing at
// sink.transaction_timeout, a key a file sink does not have), where the
// at_least_once dead letters of before ran.
func TestReviewDiffDeadLettersExactlyOnceOnABrokerWithALowerTxnMax(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := kafkatest.Brokers{Addrs: c.ListenAddrs()}
	topic := kafkatest.Topic(t, b, 1)
	dlq := kafkatest.Topic(t, b, 1)
	cfg := jobConfig(t, b, topic, t.TempDir(), jobOpts{
		checkpoint: "timeout: 10s, mode: exactly_once",
		pipeline:   fmt.Sprintf("on_decode_error: {policy: dead_letter, topic: %s}", dlq),
	})
	snk, err := DeadLetterSink(cfg, sink.Env{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer snk.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := snk.Recover(ctx, nil); err != nil {
		t.Fatalf("dead-letter sink of a file-sink job on brokers with transaction.max.timeout.ms 1 min: Recover = %v (exit 2, and no key of the job can fix it)", err)
	}
}
