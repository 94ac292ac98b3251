package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/syncbuf"
	"github.com/connector-dev/connector/record"
)

// TestAReaderFollowsPartitionsWhoseLeaderMoved: every partition moves to
// another broker between two rounds of records; the fetchers' next fetches
// to the old leaders fail, they look the leaders up again, and every record
// of both rounds is emitted once and in order.
func TestAReaderFollowsPartitionsWhoseLeaderMoved(t *testing.T) {
	c, b := fakeCluster(t, 3)
	topic := kafkatest.Topic(t, b, 4)
	produce(t, b, topic, 4, 400)

	cfg := testConfig(b, topic)
	cfg.FetchesInFlight = 2
	logs := &syncbuf.Buffer{}
	s := openSourceLogging(t, cfg, zerolog.New(logs))
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
	if n := logs.Count("partitions wait for a leader"); n == 0 {
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
	r := newReader(0, cfg, Offsets{topic: {0: 1000}}, nil, nil, testLog(t))
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
	two := append(batch(100, 5, 0, nil), batch(105, 3, 0, nil)...)
	cut := append(append([]byte{}, two...), batch(108, 4, 0, nil)[:30]...)
	for _, c := range []struct {
		name  string
		bytes []byte
		from  int64
		want  int64
	}{
		{"two batches", two, 100, 108},
		{"two batches, fetched from inside the first", two, 102, 108},
		{"two batches and a cut one", cut, 100, 108},
		{"only a cut batch", batch(108, 4, 0, nil)[:30], 108, 108},
		{"nothing", nil, 7, 7},
	} {
		rp := &kmsg.FetchResponseTopicPartition{RecordBatches: c.bytes}
		if got, _, err := nextOffset("t", rp, c.from); err != nil || got != c.want {
			t.Errorf("%s: next offset %d (%v), want %d", c.name, got, err, c.want)
		}
		// The decoder agrees on the records it finds.
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: c.from}, rp, decompressor, nil)
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
	discoverUntil(t, s, "the 5 records of partition 1", func() bool { return rec.count() == 5 })
	checkOnceInOrder(t, rec, map[partitionID]int64{{topic, 1}: 5})
}

// openSource opens a source of cfg, closed when the test ends.
func openSource(t *testing.T, cfg Options) *Source {
	t.Helper()
	return openSourceLogging(t, cfg, testLog(t))
}

// openSourceLogging is openSource logging to log.
func openSourceLogging(t *testing.T, cfg Options, log zerolog.Logger) *Source {
	t.Helper()
	s, err := Open(context.Background(), cfg, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// metadataReads counts the Metadata responses a client read.
type metadataReads struct{ n atomic.Int64 }

func (c *metadataReads) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Metadata.Int16() && err == nil {
		c.n.Add(1)
	}
}

// TestAFetchNotHandedOnIsFetchedAgain: a fetcher stopped while a response
// waits for Run (here: partitions are added while nobody takes its
// fetches) asks again from where Run's fetches ended, so the records of the
// response it dropped come again, once.
func TestAFetchNotHandedOnIsFetchedAgain(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 2, 200)
	cfg := testConfig(b, topic).withDefaults()
	cfg.FetchesInFlight = 1
	lookups := &metadataReads{}
	cfg.Hooks = func(string) []kgo.Hook { return []kgo.Hook{lookups} }
	waiting := make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(waiting) }) }
	testHookHandingOn.Store(&hook)
	t.Cleanup(func() { testHookHandingOn.Store(nil) })
	ctx, f := fetchPartitionZero(t, cfg, topic)
	// Partition 0's first response waits for Run; nothing takes it. The
	// fetcher starts over with partition 1 (a second lookup) once its
	// session has stopped.
	<-waiting
	before := lookups.n.Load()
	if err := f.add(Offsets{topic: {1: 0}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fetcher to start over", func() bool { return lookups.n.Load() > before })
	rec := collect(ctx, t, f)
	waitFor(t, "200 records", func() bool { return rec.count() >= 200 })
	checkOnceInOrder(t, rec, map[partitionID]int64{{topic, 0}: 100, {topic, 1}: 100})
}

// TestAPartitionThatCannotBeFetchedDoesNotHoldUpTheOthers: while the leader
// of partition 0 fails every fetch, the fetcher's other partition is read
// to its end; once the leader answers again, partition 0 is read too, every
// record once and in order.
func TestAPartitionThatCannotBeFetchedDoesNotHoldUpTheOthers(t *testing.T) {
	c, b := fakeCluster(t, 2)
	topic := kafkatest.Topic(t, b, 2)
	down := c.LeaderFor(topic, 0)
	if c.LeaderFor(topic, 1) == down {
		if err := c.MoveTopicPartition(topic, 1, (down+1)%2); err != nil {
			t.Fatal(err)
		}
	}
	var failing atomic.Bool
	failing.Store(true)
	c.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if failing.Load() && c.CurrentNode() == down {
			return nil, errors.New("the leader of partition 0 fails"), true
		}
		return nil, nil, false
	})
	produce(t, b, topic, 2, 200)

	cfg := testConfig(b, topic)
	cfg.FetchesInFlight = 1 // both partitions in one fetcher
	logs := &syncbuf.Buffer{}
	s := openSourceLogging(t, cfg, zerolog.New(logs))
	rec, stop := runReader(t, s.readers[0])
	defer stop()
	one := func(p int32) int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, r := range rec.records {
			if r.Partition == p {
				n++
			}
		}
		return n
	}
	waitFor(t, "partition 1's 100 records", func() bool { return one(1) == 100 })
	if n := one(0); n != 0 {
		t.Fatalf("%d records of partition 0 while its leader failed every fetch", n)
	}
	// The failed fetches end in partition 0 waiting (franz-go may retry
	// a request on a closed connection first).
	waitFor(t, "partition 0 to wait for its leader", func() bool { return logs.Count("partitions wait for a leader") > 0 })
	if n := one(0); n != 0 {
		t.Fatalf("%d records of partition 0 while its leader failed every fetch", n)
	}
	failing.Store(false)
	waitFor(t, "all 200 records", func() bool { return rec.count() == 200 })
	checkOnceInOrder(t, rec, map[partitionID]int64{{topic, 0}: 100, {topic, 1}: 100})
}

// batch encodes a record batch of n records from offset first, with its
// length and CRC; attrs are its attributes (1: gzip), records its records'
// bytes (nil: n records of value "v").
func batch(first int64, n int, attrs int16, records []byte) []byte {
	rb := kmsg.NewRecordBatch()
	rb.FirstOffset = first
	rb.LastOffsetDelta = int32(n - 1)
	rb.Magic = 2
	rb.Attributes = attrs
	rb.NumRecords = int32(n)
	if records == nil {
		for i := range n {
			r := kmsg.NewRecord()
			r.OffsetDelta = int32(i)
			r.Value = []byte("v")
			r.Length = int32(len(r.AppendTo(nil)) - 1) // the record after its length (a 1-byte varint here)
			records = r.AppendTo(records)
		}
	}
	rb.Records = records
	rb.Length = int32(len(rb.AppendTo(nil)) - 12) // from after the length field
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestADamagedBatchFailsTheFetchRatherThanBeSkipped: the fetcher moves on
// by the batches' headers; when the decoder stops at a batch it cannot
// read (after one it could), the fetch fails, so neither that batch nor the
// good one after it is skipped.
func TestADamagedBatchFailsTheFetchRatherThanBeSkipped(t *testing.T) {
	bytes := append(batch(0, 3, 0, nil), batch(3, 4, 1, []byte("not gzip at all"))...)
	bytes = append(bytes, batch(7, 2, 0, nil)...)
	rp := kmsg.FetchResponseTopicPartition{Partition: 0, RecordBatches: bytes}
	if end, _, err := nextOffset("t", &rp, 0); err != nil || end != 9 {
		t.Fatalf("next offset %d (%v), want 9", end, err)
	}
	resp := &kmsg.FetchResponse{Topics: []kmsg.FetchResponseTopic{{Topic: "t", Partitions: []kmsg.FetchResponseTopicPartition{rp}}}}
	rf := &rawFetch{resp: resp, from: Offsets{"t": {0: 0}}, ends: Offsets{"t": {0: 9}}}
	if err := fetchError(rf.decode()); err == nil || !strings.Contains(err.Error(), "could not be decoded") {
		t.Fatalf("fetch with a damaged batch between two good ones: error %v, want one saying records could not be decoded", err)
	}
}

// fakeCluster starts a kfake cluster of n brokers (with opts), closed when
// the test ends.
func fakeCluster(t *testing.T, n int, opts ...kfake.Opt) (*kfake.Cluster, kafkatest.Brokers) {
	t.Helper()
	c, err := kfake.NewCluster(append(opts, kfake.NumBrokers(n))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, kafkatest.Brokers{Addrs: c.ListenAddrs()}
}

// TestAnUnreadableMessageIsDamagedNotCut: a batch too short for its header,
// or an old-format message the decoder cannot read, is an error no retry
// helps, not a batch cut short that the next fetch would complete.
func TestAnUnreadableMessageIsDamagedNotCut(t *testing.T) {
	short := batch(5, 1, 0, nil)[:20]
	binary.BigEndian.PutUint32(short[8:], 8) // a whole batch of 20 bytes
	m := kmsg.NewMessageV1()
	m.Offset, m.Magic, m.Value = 5, 1, []byte("v")
	m.MessageSize = int32(len(m.AppendTo(nil)) - 12)
	old := m.AppendTo(nil)
	old[len(old)-1] ^= 0xff // its CRC no longer matches
	for name, b := range map[string][]byte{"short v2 batch": short, "v1 message with a bad CRC": old} {
		rp := &kmsg.FetchResponseTopicPartition{RecordBatches: b}
		if end, _, err := nextOffset("t", rp, 5); !errors.Is(err, errDamaged) || end != 5 {
			t.Errorf("%s: next offset %d, error %v; want 5 and a damaged batch", name, end, err)
		}
		if retriable(fmt.Errorf("fetch t/0: %w", errDamaged)) {
			t.Errorf("a damaged batch is retried")
		}
	}
}

// TestPartitionsGivenUpWhileTheFetcherStopsAreFetchedAgain: a session gives
// a partition up (its leader failed a fetch) just as the fetcher stops its
// sessions (partitions were added); the partition is taken back from the
// sessions as they end and fetched in the next round, every record once.
func TestPartitionsGivenUpWhileTheFetcherStopsAreFetchedAgain(t *testing.T) {
	c, b := fakeCluster(t, 1)
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 2, 200)
	var (
		failing atomic.Bool
		fetches atomic.Int64
	)
	failing.Store(true)
	c.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if fetches.Add(1) > 1 && failing.Load() { // the first fetch (all of partition 0) goes through
			return nil, errors.New("the leader fails"), true
		}
		return nil, nil, false
	})
	givingUp := make(chan struct{})
	var once sync.Once
	hook := func(ctx context.Context) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return
		}
		failing.Store(false)
		close(givingUp)
		<-ctx.Done() // until the fetcher stops its sessions
	}
	testHookGivingUp.Store(&hook)
	t.Cleanup(func() { testHookGivingUp.Store(nil) })

	cfg := testConfig(b, topic).withDefaults()
	cfg.FetchesInFlight = 1
	ctx, f := fetchPartitionZero(t, cfg, topic)
	rec := collect(ctx, t, f)
	waitFor(t, "partition 0's 100 records", func() bool { return rec.count() == 100 })
	<-givingUp
	if err := f.add(Offsets{topic: {1: 0}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "200 records", func() bool { return rec.count() >= 200 })
	checkOnceInOrder(t, rec, map[partitionID]int64{{topic, 0}: 100, {topic, 1}: 100})
}

// collect takes f's fetches from now on, in the background until ctx is
// done, and records what they hold.
func collect(ctx context.Context, t *testing.T, f *fetchers) *recorder {
	rec := &recorder{}
	go func() {
		for {
			select {
			case x := <-f.out:
				if x.err != nil {
					t.Error(x.err)
					return
				}
				var b []record.Record
				x.raw.decode().EachRecord(func(kr *kgo.Record) { b = append(b, convert(kr)); kr.Recycle() })
				_ = rec.Records(ctx, b)
			case <-ctx.Done():
				return
			}
		}
	}()
	return rec
}

// fetchPartitionZero starts a reader's fetchers over partition 0 of topic,
// stopped when the test ends (then ctx is done).
func fetchPartitionZero(t *testing.T, cfg Options, topic string) (context.Context, *fetchers) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f, err := startFetchers(ctx, 0, cfg, fetchPartitionFloor, Offsets{topic: {0: 0}}, nil, nil, testLog(t))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.close(); cancel() })
	return ctx, f
}

// TestAPartitionAResponseHoldsTwiceIsEmittedOnce: a response that holds a
// partition twice (a topic listed twice, each with its batches) moves the
// partition on once, and its records are decoded once.
func TestAPartitionAResponseHoldsTwiceIsEmittedOnce(t *testing.T) {
	part := kmsg.FetchResponseTopicPartition{Partition: 0, RecordBatches: batch(0, 3, 0, nil)}
	resp := &kmsg.FetchResponse{Topics: []kmsg.FetchResponseTopic{
		{Topic: "t", Partitions: []kmsg.FetchResponseTopicPartition{part}},
		{Topic: "t", Partitions: []kmsg.FetchResponseTopicPartition{part}},
	}}
	s := &session{next: Offsets{"t": {0: 0}}}
	ends, _, cut, failed, why := s.read(resp)
	if end, _ := ends.Lookup("t", 0); end != 3 || ends.Len() != 1 || cut || failed.Len() != 0 || why != nil {
		t.Fatalf("read: ends %s, cut %v, failed %s, %v; want t/0 to 3", ends, cut, failed, why)
	}
	rf := &rawFetch{resp: resp, from: s.next.Clone(), ends: ends}
	if offsets, _ := rf.size(); offsets != 3 {
		t.Errorf("the fetch counts %d offsets, want 3", offsets)
	}
	n := 0
	rf.decode().EachRecord(func(*kgo.Record) { n++ })
	if n != 3 {
		t.Fatalf("%d records decoded, want 3", n)
	}
}
