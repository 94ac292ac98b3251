package kafkatest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestRealBrokerProducesConsumesAndCommits proves the harness: on Apache Kafka
// a topic is created, 10,000 records go in, a group member reads every one back
// exactly once, commits, and kadm reads the committed offsets back equal to the
// end of every partition.
func TestRealBrokerProducesConsumesAndCommits(t *testing.T) {
	roundTrip(t, kafkatest.RealCluster(t))
}

// TestFakeBrokerProducesConsumesAndCommits runs the same round trip on the
// in-process kfake broker the fast tests use.
func TestFakeBrokerProducesConsumesAndCommits(t *testing.T) {
	roundTrip(t, kafkatest.Fake(t))
}

func roundTrip(t *testing.T, b kafkatest.Brokers) {
	const n, partitions = 10_000, 4
	topic := kafkatest.Topic(t, b, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		r := kgo.StringRecord(fmt.Sprintf(`{"id":%d}`, i))
		r.Partition = int32(i % partitions)
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	group := topic + "-group"
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addrs...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(group),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := make(map[string]int, n)
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records before timeout", len(seen), n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, c := range seen {
		if c != 1 {
			t.Errorf("record %s consumed %d times", v, c)
		}
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	adm := kafkatest.Admin(t, b)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch committed offsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	var total int64
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, e.Partition)
		if !ok {
			t.Errorf("partition %d: no committed offset", e.Partition)
			return
		}
		if c.At != e.Offset {
			t.Errorf("partition %d: committed %d, end %d", e.Partition, c.At, e.Offset)
		}
		total += c.At
	})
	if total != n {
		t.Errorf("committed offsets sum to %d, want %d", total, n)
	}
	t.Logf("broker %s: %d records produced, consumed once each, offsets committed", b, n)
}
