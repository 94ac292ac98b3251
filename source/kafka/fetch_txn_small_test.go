package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// checkBarriersSplit fails t unless every barrier's position splits each
// partition's records: those emitted before the barrier are below it, those
// after at or above it (a restore from it neither loses nor repeats one).
func checkBarriersSplit(t *testing.T, rec *recorder) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, br := range rec.barriers {
		for i, x := range rec.records {
			at, ok := br.offsets.Lookup(x.Topic, x.Partition)
			if !ok {
				t.Errorf("barrier %d: no position of %s/%d", br.id, x.Topic, x.Partition)
				return
			}
			if i < br.after && x.Offset >= at {
				t.Errorf("barrier %d at %s/%d=%d, but record at offset %d was emitted before it: a restore repeats it", br.id, x.Topic, x.Partition, at, x.Offset)
				return
			}
			if i >= br.after && x.Offset < at {
				t.Errorf("barrier %d at %s/%d=%d, but record at offset %d was emitted after it: a restore loses it", br.id, x.Topic, x.Partition, at, x.Offset)
				return
			}
		}
	}
}

// TestTransactionsThroughSmallFetches: committed and aborted
// transactions over 3 partitions, read with fetch shares far smaller than
// the batches (every response cut, partitions taking turns): every
// committed record once and in order, no aborted one, barriers exact.
func TestTransactionsThroughSmallFetches(t *testing.T) {
	b := kafkatest.RealCluster(t)
	const parts = 3
	topic := kafkatest.Topic(t, b, parts)
	ctx := context.Background()
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(topic+"-txn"),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	value := strings.Repeat("x", 300)
	want := map[int32][]string{}
	for txn := range 12 {
		commit := txn%3 != 1
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			part := int32((txn + i) % parts)
			v := fmt.Sprintf("%v-%d-%d-%s", commit, txn, i, value)
			p.Produce(ctx, &kgo.Record{Partition: part, Value: []byte(v)}, nil)
			if commit {
				want[part] = append(want[part], v)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, vs := range want {
		total += len(vs)
	}

	cfg := testConfig(b, topic)
	cfg.BatchSize = 7
	cfg.FetchesInFlight = 1
	cfg.FetchMaxPartitionBytes = 512
	cfg.FetchMaxBytes = 600
	s := openSource(t, cfg)
	r := s.readers[0]
	em := &triggering{recorder: &recorder{}, r: r, every: 2}
	stop := runWith(t, r, em)
	waitFor(t, fmt.Sprintf("%d committed records", total), func() bool { return em.count() >= total })
	stop()

	got := map[int32][]string{}
	last := map[int32]int64{}
	for _, x := range em.records {
		if o, ok := last[x.Partition]; ok && x.Offset <= o {
			t.Fatalf("partition %d: offset %d after %d", x.Partition, x.Offset, o)
		}
		last[x.Partition] = x.Offset
		got[x.Partition] = append(got[x.Partition], string(x.Value))
	}
	for part := range int32(parts) {
		if strings.Join(got[part], ",") != strings.Join(want[part], ",") {
			t.Errorf("partition %d: %d records, want the %d committed ones in order", part, len(got[part]), len(want[part]))
		}
	}
	checkBarriersSplit(t, em.recorder)
}

// TestTwoTopicsInOneSession: a session over two topics of two
// partitions each; the rotated requests list a topic twice (a1 b0 b1 a0):
// every record once and in order on the real broker.
func TestTwoTopicsInOneSession(t *testing.T) {
	b := kafkatest.RealCluster(t)
	t1 := kafkatest.Topic(t, b, 2)
	t2 := kafkatest.Topic(t, b, 2)
	produce(t, b, t1, 2, 400)
	produce(t, b, t2, 2, 400)
	cfg := testConfig(b, t1)
	cfg.Topics = []string{t1, t2}
	cfg.FetchesInFlight = 1
	cfg.FetchMaxPartitionBytes = 600
	cfg.FetchMaxBytes = 1000
	cfg.BatchSize = 5
	s := openSource(t, cfg)
	r := s.readers[0]
	em := &triggering{recorder: &recorder{}, r: r, every: 3}
	stop := runWith(t, r, em)
	waitFor(t, "800 records", func() bool { return em.count() >= 800 })
	stop()
	checkOnceInOrder(t, em.recorder, map[partitionID]int64{{t1, 0}: 200, {t1, 1}: 200, {t2, 0}: 200, {t2, 1}: 200})
	checkBarriersSplit(t, em.recorder)
}
