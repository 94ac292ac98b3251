package kafka

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/syncbuf"
)

// TestAReaderFollowsPartitionsWhoseLeaderMoved: every partition moves to
// another broker between two rounds of records; the fetchers' next fetches
// to the old leaders fail, they look the leaders up again, and every record
// of both rounds is emitted once and in order.
func TestAReaderFollowsPartitionsWhoseLeaderMoved(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := kafkatest.Brokers{Addrs: c.ListenAddrs()}
	topic := kafkatest.Topic(t, b, 4)
	produce(t, b, topic, 4, 400)

	cfg := testConfig(b, topic)
	cfg.FetchesInFlight = 2
	logs := &syncbuf.Buffer{}
	s, err := Open(context.Background(), cfg, nil, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rec, stop := runReader(t, s.readers[0])
	waitFor(t, "the first 400 records", func() bool { return rec.count() == 400 })

	for p := range int32(4) {
		to := (c.LeaderFor(topic, p) + 1) % 3
		if err := c.MoveTopicPartition(topic, p, to); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, b, topic, 4, 400)
	waitFor(t, "all 800 records", func() bool { return rec.count() == 800 })
	stop()

	all := map[partitionID]int64{}
	for p := range int32(4) {
		all[partitionID{topic, p}] = 200
	}
	checkOnceInOrder(t, rec, all)
	if n := logs.Count("looking the partitions' leaders up again"); n == 0 {
		t.Errorf("no fetcher looked the leaders up again after they moved: the move was not tested; log:\n%s", logs.String())
	}
}

// TestAFetchFromAnOffsetOutOfRangeStopsTheReader: an offset the log does not
// hold is not skipped or reset: Run returns the broker's error (the job then
// restores and applies on_position_lost).
func TestAFetchFromAnOffsetOutOfRangeStopsTheReader(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 10)
	cfg := testConfig(b, topic).withDefaults()
	r := newReader(0, cfg, Offsets{topic: {0: 1000}}, nil, testLog(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := r.Run(ctx, &recorder{})
	if !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("Run from offset 1000 of a log of 10: %v, want OFFSET_OUT_OF_RANGE", err)
	}
}

// TestATopicRecreatedWhileReadIsAnError: a topic deleted and created again
// under its name while a reader reads it is not read from the old offsets:
// the fetcher finds another topic ID and Run returns the error.
func TestATopicRecreatedWhileReadIsAnError(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 10)
	s := openSource(t, testConfig(b, topic))
	rec, done, cancel := startReader(s.readers[0])
	defer cancel()
	waitFor(t, "the 10 records", func() bool { return rec.count() == 10 })

	ctx, cancelOps := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelOps()
	adm := kafkatest.Admin(t, b)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce(t, b, topic, 1, 20)
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("the reader still runs 30 s after its topic was recreated")
	}
	if err == nil || !strings.Contains(err.Error(), "created again") {
		t.Fatalf("Run after the topic was recreated: %v, want an error saying it was created again", err)
	}
	if rec.count() != 10 {
		t.Errorf("%d records emitted, want the 10 of the first topic only", rec.count())
	}
}

// TestNextOffsetReadsTheBatchesHeaders: the offset after a response is the
// one after its last whole batch; a batch cut short at the end and a
// response without a whole batch leave it where it was.
func TestNextOffsetReadsTheBatchesHeaders(t *testing.T) {
	batch := func(first int64, n int) []byte {
		rb := kmsg.NewRecordBatch()
		rb.FirstOffset = first
		rb.LastOffsetDelta = int32(n - 1)
		rb.Magic = 2
		rb.NumRecords = int32(n)
		var recs []byte
		for i := range n {
			r := kmsg.NewRecord()
			r.OffsetDelta = int32(i)
			r.Value = []byte("v")
			r.Length = int32(len(r.AppendTo(nil)) - 1) // the record after its length (a 1-byte varint here)
			recs = r.AppendTo(recs)
		}
		rb.Records = recs
		raw := rb.AppendTo(nil)
		// Length counts from after the length field; AppendTo computes
		// it only when asked: set it here.
		rb.Length = int32(len(raw) - 12)
		return rb.AppendTo(nil)
	}
	two := append(batch(100, 5), batch(105, 3)...)
	cut := append(append([]byte{}, two...), batch(108, 4)[:30]...)
	for _, c := range []struct {
		name  string
		bytes []byte
		from  int64
		want  int64
	}{
		{"two batches", two, 100, 108},
		{"two batches, fetched from inside the first", two, 102, 108},
		{"two batches and a cut one", cut, 100, 108},
		{"only a cut batch", batch(108, 4)[:30], 108, 108},
		{"nothing", nil, 7, 7},
	} {
		rp := &kmsg.FetchResponseTopicPartition{RecordBatches: c.bytes}
		if got := nextOffset("t", rp, c.from); got != c.want {
			t.Errorf("%s: next offset %d, want %d", c.name, got, c.want)
		}
		// The decoder agrees on the records it finds.
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: c.from, DisableCRCValidation: true}, rp, decompressor, nil)
		if fp.Err != nil {
			t.Fatalf("%s: decoding: %v", c.name, fp.Err)
		}
		if n := int64(len(fp.Records)); c.want > c.from && (n == 0 || fp.Records[n-1].Offset != c.want-1) {
			t.Errorf("%s: the decoder found %d records (%v), want its last at %d", c.name, n, fp.Records, c.want-1)
		}
	}
}

// batchCounter counts the records of the batches a client's hooks are told
// it fetched.
type batchCounter struct {
	mu      sync.Mutex
	records int
}

func (c *batchCounter) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records += m.NumRecords
}

// TestFetchedBatchesReachTheClientsHooks: the client metrics (kprom's
// fetched bytes and records) still see every batch the fetchers decode.
func TestFetchedBatchesReachTheClientsHooks(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 3)
	produce(t, b, topic, 3, 300)
	cfg := testConfig(b, topic)
	counter := &batchCounter{}
	cfg.Hooks = func(name string) []kgo.Hook {
		if name == "source-admin" {
			return nil
		}
		return []kgo.Hook{counter}
	}
	s := openSource(t, cfg)
	rec, stop := runReader(t, s.readers[0])
	waitFor(t, "300 records", func() bool { return rec.count() == 300 })
	stop()
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if counter.records < 300 {
		t.Errorf("the hooks were told of %d records fetched, want at least the 300 emitted", counter.records)
	}
}

// TestAReaderThatStartsWithoutPartitionsReadsThoseAddedLater: with two
// readers over a topic of one partition, the second starts with nothing to
// fetch; the partition added to the topic while the job runs is its, and
// it reads it.
func TestAReaderThatStartsWithoutPartitionsReadsThoseAddedLater(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	cfg := testConfig(b, topic)
	cfg.Readers = 2
	s := openSource(t, cfg)
	if n := s.readers[1].positions.Len(); n != 0 {
		t.Fatalf("reader 1 starts with %d partitions, want none", n)
	}
	rec, stop := runReader(t, s.readers[1])
	defer stop()

	addPartition(t, b, topic, 2)
	produce(t, b, topic, 2, 10) // 5 in each partition; reader 1 owns partition 1
	waitFor(t, "the 5 records of partition 1", func() bool {
		if err := s.Discover(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		return rec.count() == 5
	})
	checkOnceInOrder(t, rec, map[partitionID]int64{{topic, 1}: 5})
}

// openSource opens a source of cfg, closed when the test ends.
func openSource(t *testing.T, cfg Options) *Source {
	t.Helper()
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
