package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/source"
)

// recorder is an Emitter that keeps everything in order.
type recorder struct {
	mu       sync.Mutex
	records  []record.Record
	barriers []barrierAt
	cancels  []checkpoint.ID
}

type barrierAt struct {
	id      checkpoint.ID
	after   int // records emitted before the barrier
	offsets Offsets
}

func (r *recorder) Records(_ context.Context, b []record.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, b...)
	return nil
}

func (r *recorder) Barrier(_ context.Context, id checkpoint.ID, _ time.Time, pos source.Position) error {
	p, err := decodePosition(pos)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.barriers = append(r.barriers, barrierAt{id, len(r.records), p.Offsets})
	return nil
}

func (r *recorder) Cancel(_ context.Context, id checkpoint.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancels = append(r.cancels, id)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

func produce(t *testing.T, b kafkatest.Brokers, topic string, partitions, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range n {
		r := kgo.StringRecord(fmt.Sprintf(`{"id":%d}`, i))
		r.Partition = int32(i % partitions)
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func testConfig(b kafkatest.Brokers, topic string) Options {
	return Options{Brokers: b.Addrs, Topics: []string{topic}, Group: topic + "-g", BatchSize: 64}
}

// discoverUntil runs the source's partition discovery, as the runtime
// does every DiscoverInterval, until cond holds or 20 s pass (waitFor's
// polling paces it).
func discoverUntil(t *testing.T, s *Source, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, func() bool {
		if err := s.Discover(context.Background()); err != nil {
			t.Fatal(err)
		}
		return cond()
	})
}

// addPartition adds a partition to topic and waits until the metadata
// shows the topic with n partitions.
func addPartition(t *testing.T, b kafkatest.Brokers, topic string, n int) {
	t.Helper()
	adm := kafkatest.Admin(t, b)
	if _, err := adm.CreatePartitions(context.Background(), 1, topic); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new partition in the metadata", func() bool {
		md, err := adm.Metadata(context.Background(), topic)
		return err == nil && len(md.Topics[topic].Partitions) == n
	})
}

// waitFor polls cond until it holds or 20s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startReader runs r in the background: what it emits, the error its Run
// returns, and the cancel of Run's context.
func startReader(r *Reader) (*recorder, <-chan error, context.CancelFunc) {
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, rec) }()
	return rec, done, cancel
}

// runUntilError runs r and returns the error its Run stops with; the test
// fails if Run still runs after 20 s (why says what it would then be doing).
func runUntilError(t *testing.T, r *Reader, why string) error {
	t.Helper()
	_, done, cancel := startReader(r)
	defer cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("the reader still runs after 20 s: %s", why)
		return nil
	}
}

func runReader(t *testing.T, r *Reader) (*recorder, func()) {
	t.Helper()
	rec, done, cancel := startReader(r)
	return rec, func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("reader stopped with %v, want context.Canceled", err)
		}
	}
}

func TestBarrierOffsetsAreTheNextOffsetAfterEveryRecordBeforeIt(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 3)
	produce(t, b, topic, 3, 600)
	s, err := Open(context.Background(), testConfig(b, topic), nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.readers[0]
	rec, stop := runReader(t, r)
	waitFor(t, "some records", func() bool { return rec.count() > 0 })
	r.Trigger(1, time.Now())
	waitFor(t, "all records", func() bool { return rec.count() == 600 })
	r.Trigger(2, time.Now())
	r.CancelBarrier(2)
	waitFor(t, "cancel marker", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.cancels) == 1 })
	stop()

	for _, br := range rec.barriers {
		want := Offsets{}
		for p := range int32(3) {
			want.Set(topic, p, 0)
		}
		for _, x := range rec.records[:br.after] {
			want.Set(x.Topic, x.Partition, x.Offset+1)
		}
		if br.offsets.String() != want.String() {
			t.Errorf("barrier %d after %d records: offsets %s, want %s", br.id, br.after, br.offsets, want)
		}
	}
	if len(rec.barriers) != 2 || rec.barriers[1].after != 600 {
		t.Fatalf("barriers %+v, want 2 with the last after all 600 records", rec.barriers)
	}
	seen := map[string]bool{}
	for _, x := range rec.records {
		if seen[string(x.Value)] {
			t.Fatalf("record %s emitted twice", x.Value)
		}
		seen[string(x.Value)] = true
	}
}

// TestASuspendedReaderEmitsNoRecordsAfterTheFinalBarrier: once the job is
// stopping (Suspend) and the final checkpoint's barrier is out, the reader
// emits no more records, though more are there to read; later barriers
// still flow, at the same position.
func TestASuspendedReaderEmitsNoRecordsAfterTheFinalBarrier(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 3)
	produce(t, b, topic, 3, 3000)
	s, err := Open(context.Background(), testConfig(b, topic), nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.readers[0]
	rec, stop := runReader(t, r)
	waitFor(t, "some records", func() bool { return rec.count() > 0 })
	r.Suspend(2)
	r.Trigger(1, time.Now()) // before the final checkpoint: records go on
	r.Trigger(2, time.Now())
	waitFor(t, "barrier 2", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.barriers) == 2 })
	produce(t, b, topic, 3, 300)
	r.Trigger(3, time.Now()) // a retried final checkpoint
	waitFor(t, "barrier 3", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.barriers) == 3 })
	stop()

	final, retried := rec.barriers[1], rec.barriers[2]
	if final.id != 2 || len(rec.records) != final.after {
		t.Errorf("%d records emitted, %d of them before barrier %d: want none after the final barrier", len(rec.records), final.after, final.id)
	}
	if retried.offsets.String() != final.offsets.String() {
		t.Errorf("barrier 3 at %s, barrier 2 at %s: want the same position", retried.offsets, final.offsets)
	}
}

func TestStartPrefersRestoredThenCommittedThenStartOffset(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 3)
	produce(t, b, topic, 3, 300) // 100 per partition
	cfg := testConfig(b, topic)
	adm := kafkatest.Admin(t, b)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 40, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: topic, Partition: 2, At: 70, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(context.Background(), cfg.Group, os); err != nil {
		t.Fatal(err)
	}
	restored := Offsets{}
	restored.Set(topic, 2, 90)

	s, err := Open(context.Background(), cfg, &position{Offsets: restored}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.readers[0].positions.String()
	want := fmt.Sprintf("%s/0=0 %s/1=40 %s/2=90", topic, topic, topic)
	if got != want {
		t.Fatalf("starts %s, want %s", got, want)
	}

	cfg.StartOffset = StartLatest
	cfg.Group += "-fresh"
	s2, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, want := s2.readers[0].positions.String(), fmt.Sprintf("%s/0=100 %s/1=100 %s/2=100", topic, topic, topic); got != want {
		t.Fatalf("latest starts %s, want %s", got, want)
	}
}

func TestReadersSplitPartitionsAndTogetherReadEverythingOnce(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 5)
	produce(t, b, topic, 5, 500)
	cfg := testConfig(b, topic)
	cfg.Readers = 2
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var recs []*recorder
	for _, r := range s.readers {
		rec, stop := runReader(t, r)
		defer stop()
		recs = append(recs, rec)
	}
	waitFor(t, "500 records", func() bool { return recs[0].count()+recs[1].count() == 500 })
	for i, rec := range recs {
		rec.mu.Lock()
		for _, x := range rec.records {
			if int(x.Partition)%2 != i {
				t.Errorf("reader %d read partition %d", i, x.Partition)
			}
		}
		rec.mu.Unlock()
	}
}

func TestASlotReadsOnlyItsPartitions(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 5)
	produce(t, b, topic, 5, 500) // 100 per partition
	cfg := testConfig(b, topic)
	cfg.Readers = 2
	cfg.Slot = &source.Slot{Index: 1, Of: 3} // partitions 1 and 4
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, ok1 := s.known.Lookup(topic, 1)
	_, ok4 := s.known.Lookup(topic, 4)
	if !ok1 || !ok4 || s.known.Len() != 2 {
		t.Errorf("partitions known: %s, want partitions 1 and 4 only", s.known)
	}
	var recs []*recorder
	for _, r := range s.readers {
		rec, stop := runReader(t, r)
		defer stop()
		recs = append(recs, rec)
	}
	waitFor(t, "200 records", func() bool { return recs[0].count()+recs[1].count() == 200 })
	for _, rec := range recs {
		rec.mu.Lock()
		for _, x := range rec.records {
			if x.Partition != 1 && x.Partition != 4 {
				t.Errorf("slot 1 of 3 read partition %d", x.Partition)
			}
		}
		rec.mu.Unlock()
	}
	if n := recs[0].count() + recs[1].count(); n != 200 {
		t.Errorf("%d records read, want the slot's 200", n)
	}
}

func TestASlotThatNeverRanStartsWhereTheJobsOwnGroupStopped(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 3)
	produce(t, b, topic, 3, 300) // 100 per partition
	base := topic + "-g"
	// The job in single mode committed partitions 0 and 1.
	adm := kafkatest.Admin(t, b)
	var o kadm.Offsets
	o.AddOffset(topic, 0, 70, -1)
	o.AddOffset(topic, 1, 40, -1)
	if _, err := adm.CommitOffsets(context.Background(), base, o); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(b, topic)
	cfg.Slot = &source.Slot{Index: 1, Of: 2} // partition 1
	cfg.Group, cfg.BaseGroup = cfg.Slot.Group(base), base
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, ok := s.known.Lookup(topic, 1); !ok || n != 40 || s.known.Len() != 1 {
		t.Errorf("slot 1 of 2 starts at %s, want partition 1 at the job's committed 40", s.known)
	}
	// Once the slot's own group has an offset, that one wins.
	if err := s.CommitOffsets(context.Background(), Offsets{topic: {1: 55}}); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n, _ := s2.known.Lookup(topic, 1); n != 55 {
		t.Errorf("slot 1 restarts at %d, want its own group's 55", n)
	}
}

func TestDiscoverPicksUpPartitionsAddedWhileRunning(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 10)
	s, err := Open(context.Background(), testConfig(b, topic), nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, stop := runReader(t, s.readers[0])
	defer stop()
	waitFor(t, "10 records", func() bool { return rec.count() == 10 })

	addPartition(t, b, topic, 2)
	produce(t, b, topic, 2, 10) // 5 land in the new partition 1
	// Discovery is periodic and metadata is cached for a few seconds, so the
	// runtime's loop is imitated: discover until the records arrive.
	discoverUntil(t, s, "20 records", func() bool { return rec.count() == 20 })
}

func TestCommitWritesOffsetsToTheGroup(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	cfg := testConfig(b, topic)
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := Offsets{}
	o.Set(topic, 0, 12)
	o.Set(topic, 1, 34)
	if err := s.CommitOffsets(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got, err := kafkatest.Admin(t, b).FetchOffsets(context.Background(), cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 12, 1: 34} {
		if c, ok := got.Lookup(topic, p); !ok || c.At != want {
			t.Errorf("partition %d committed %+v, want %d", p, c, want)
		}
	}
}

func TestOpenRetriesUntilTheTopicExistsOrContextEnds(t *testing.T) {
	b := kafkatest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := Open(ctx, Options{Brokers: b.Addrs, Topics: []string{fmt.Sprintf("no-such-topic-%d", time.Now().UnixNano())}, Group: "g"}, nil, testLog(t))
	if err == nil {
		t.Fatal("Open succeeded on a missing topic")
	}
	if ctx.Err() == nil {
		t.Fatalf("Open gave up before its context ended: %v", err)
	}
}

func TestOffsetsEncodeRoundTrip(t *testing.T) {
	o := Offsets{}
	o.Set("a", 0, 5)
	o.Set("b", 3, 7)
	enc, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeOffsets(enc)
	if err != nil || back.String() != o.String() {
		t.Fatalf("round trip: %v %s, want %s", err, back, o)
	}
	if _, err := DecodeOffsets([]byte("{")); err == nil {
		t.Fatal("decoding garbage succeeded")
	}
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t))
}

// TestPartitionMissingFromTheRestoredCheckpointStartsAtLogStart: a partition
// added after the checkpoint was taken is read from its first record when
// the job restores, even with start_offset latest, so the records it got
// before a crash are not skipped.
func TestPartitionMissingFromTheRestoredCheckpointStartsAtLogStart(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 2, 20)
	cfg := testConfig(b, topic)
	cfg.StartOffset = StartLatest
	restored := Offsets{}
	restored.Set(topic, 0, 4)
	s, err := Open(context.Background(), cfg, &position{Offsets: restored}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.readers[0].positions.String(), fmt.Sprintf("%s/0=4 %s/1=0", topic, topic); got != want {
		t.Fatalf("starts %s, want %s", got, want)
	}
}
