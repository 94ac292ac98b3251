package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/source"
)

// TestPositionsRoundTripWithTopicIDsAndOldOnesStillDecode: a reader's
// position carries the topics' IDs; a position written before IDs (a bare
// offsets map) still decodes, without IDs.
func TestPositionsRoundTripWithTopicIDsAndOldOnesStillDecode(t *testing.T) {
	o := Offsets{}
	o.Set("orders", 0, 7)
	b, err := encodePosition(o, nil, map[string]kadm.TopicID{"orders": {1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodePosition(b)
	if err != nil || p.Offsets.String() != "orders/0=7" || p.TopicIDs["orders"] != (kadm.TopicID{1, 2, 3}).String() {
		t.Fatalf("round trip: %+v, %v (from %s)", p, err, b)
	}
	old, err := decodePosition([]byte(`{"orders":{"0":7}}`))
	if err != nil || old.Offsets.String() != "orders/0=7" || len(old.TopicIDs) != 0 {
		t.Fatalf("old position: %+v, %v", old, err)
	}
}

// recreate deletes topic and creates it again with n records, waiting until
// the broker serves the new one.
func recreate(t *testing.T, b kafkatest.Brokers, topic string, partitions int32, n int) {
	t.Helper()
	adm := kafkatest.Admin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("recreate %s: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond) // the deletion completes in the background
	}
	produce(t, b, topic, int(partitions), n)
}

// TestARecreatedTopicIsNotReadFromTheOldOffsets: the checkpoint's positions
// name the topic's ID; after the topic is deleted and recreated, a restore
// refuses (source.ErrPermanent, naming the topic and both IDs) instead of
// applying the old offsets to the new topic, and with on_position_lost
// earliest it reads the new topic from its start.
func TestARecreatedTopicIsNotReadFromTheOldOffsets(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 2, 100)
	cfg := testConfig(b, topic)
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	o := Offsets{}
	o.Set(topic, 0, 30)
	o.Set(topic, 1, 40)
	pos, err := encodePosition(o, nil, s.ids)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := mergePositions([]source.Position{pos})
	if err != nil {
		t.Fatal(err)
	}

	recreate(t, b, topic, 2, 20) // 10 per partition: the old offsets fit the new log
	_, err = Open(context.Background(), cfg, &restored, testLog(t))
	if !errors.Is(err, source.ErrPermanent) || !strings.Contains(err.Error(), "deleted and recreated") || !strings.Contains(err.Error(), "on_position_lost") {
		t.Fatalf("restore over a recreated topic: %v, want a permanent error naming it", err)
	}

	cfg.OnPositionLost = PositionLostEarliest
	s, err = Open(context.Background(), cfg, &restored, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.readers[0].positions.String(), topic+"/0=0 "+topic+"/1=0"; got != want {
		t.Fatalf("with earliest: starts %s, want %s", got, want)
	}
	// The restore commits the checkpoint's positions again (pipeline):
	// the old topic's offsets are not written over the new one's.
	if err := s.Commit(context.Background(), []source.Position{pos}); err != nil {
		t.Fatal(err)
	}
	committed, err := kafkatest.Admin(t, b).FetchOffsets(context.Background(), cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			t.Errorf("the old topic's offset %d committed for the new topic's %s/%d", o.At, o.Topic, o.Partition)
		}
	})
}

// TestRestoredOffsetsOutsideTheLogAreRefused: an offset that cannot be
// (negative), beyond the log end, or below the log start (records deleted
// by retention) is named, not applied.
func TestRestoredOffsetsOutsideTheLogAreRefused(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 3)
	produce(t, b, topic, 3, 60) // 20 per partition
	adm := kafkatest.Admin(t, b)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 2, At: 10})
	if _, err := adm.DeleteRecords(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	o := Offsets{}
	o.Set(topic, 0, -1)
	o.Set(topic, 1, 25)
	o.Set(topic, 2, 5)
	_, err := Open(context.Background(), testConfig(b, topic), &position{Offsets: o}, testLog(t))
	if !errors.Is(err, source.ErrPermanent) {
		t.Fatalf("Open = %v, want a permanent error", err)
	}
	for _, want := range []string{"/0: offset -1 is not an offset", "/1: offset 25 is beyond the log end 20", "/2: offset 5 is below the log start 10: 5 records were deleted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestAnInvalidTopicIsAPermanentErrorNotUnreachable: a name the broker
// refuses fails at once with the broker's error, instead of being retried
// as if the broker were down.
func TestAnInvalidTopicIsAPermanentErrorNotUnreachable(t *testing.T) {
	b := kafkatest.RealCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Open(ctx, Options{Brokers: b.Addrs, Topics: []string{"bad/name"}, Group: "g"}, nil, testLog(t))
	if !errors.Is(err, source.ErrPermanent) || ctx.Err() != nil {
		t.Fatalf("Open = %v (context: %v), want a permanent error before the deadline", err, ctx.Err())
	}
}

// TestASecondLiveInstanceOfTheJobIsNoticedThroughTheGroup: two sources of one
// job (separate directories, same group) both commit; once each saw the
// other commit after it, the one that started later stops with a permanent
// error naming the other, and the earlier one goes on.
func TestASecondLiveInstanceOfTheJobIsNoticedThroughTheGroup(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 10)
	cfg := testConfig(b, topic)
	ctx := context.Background()
	first, err := Open(ctx, cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(ctx, cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	o := Offsets{}
	o.Set(topic, 0, 5)
	for _, s := range []*Source{first, second, first} {
		if err := s.CommitOffsets(ctx, o); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	err = second.CommitOffsets(ctx, o)
	if !errors.Is(err, source.ErrPermanent) || !strings.Contains(err.Error(), "another process commits to group") {
		t.Fatalf("the later instance's commit: %v, want a permanent error naming the other", err)
	}
	if err := first.CommitOffsets(ctx, o); err != nil {
		t.Fatalf("the earlier instance must go on: %v", err)
	}
}

// TestADeadPredecessorsCommitOfAnotherTopicIsNotALiveInstance: the group
// holds an offset of a topic the job no longer reads, committed by a process
// of the job that started earlier and is gone. Every later run of the job
// took it for a live instance at its second commit and stopped for good
// ("another process commits to group"); only the partitions this process
// commits tell of another instance. Nor is the topic committed again.
func TestADeadPredecessorsCommitOfAnotherTopicIsNotALiveInstance(t *testing.T) {
	b := kafkatest.Cluster(t)
	read, dropped := kafkatest.Topic(t, b, 1), kafkatest.Topic(t, b, 1)
	cfg := testConfig(b, read)
	ctx := context.Background()
	gone := make(kadm.Offsets)
	gone.Add(kadm.Offset{Topic: dropped, Partition: 0, At: 0, LeaderEpoch: -1, Metadata: instancePrefix + "host=gone pid=1 start=1"})
	if err := kafkatest.Admin(t, b).CommitAllOffsets(ctx, cfg.Group, gone); err != nil {
		t.Fatal(err)
	}
	s := openSource(t, cfg)
	o := Offsets{}
	o.Set(read, 0, 0)
	for i := range 3 {
		if err := s.CommitOffsets(ctx, o); err != nil {
			t.Fatalf("commit %d: %v", i+1, err)
		}
	}
	// A restored checkpoint's positions, committed again by the restore,
	// hold the topic too: its offset is not committed, since the job no
	// longer reads it.
	o.Set(dropped, 0, 7)
	pos, err := encodePosition(o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, []source.Position{pos}); err != nil {
		t.Fatal(err)
	}
	committed, err := kafkatest.Admin(t, b).FetchOffsets(ctx, cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := committed.Lookup(dropped, 0); c.At != 0 {
		t.Errorf("the dropped topic's offset is %d, want the predecessor's 0 left as it was", c.At)
	}
}

// TestAPositionMovesPastTheMarkersAfterItsLastRecord: a partition whose log
// ends with transactions' markers (a committed transaction, records 0-2 and
// its marker 3; an aborted one, records 4-5 and marker 6). Once the fetch
// holding them was emitted, a barrier's position is the log end, 7, not 3,
// the offset after the last record: there, once retention had deleted the
// whole log, a restore was refused as 4 records lost though every
// committed record had been read (and the partition's lag stayed above 0).
// The position's leader epoch is the markers' (the real broker writes them
// in its epoch), which a restore checks against the broker's log.
func TestAPositionMovesPastTheMarkersAfterItsLastRecord(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	ctx := context.Background()
	p := txnProducer(t, b, topic)
	for _, txn := range []struct {
		records int
		commit  bool
	}{{3, true}, {2, false}} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range txn.records {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%v-%d", txn.commit, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(txn.commit)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(b, topic)
	s, err := Open(ctx, cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.readers[0]
	rec, stop := runReader(t, r)
	// A barrier at a time, until one is at the log end: the ones before
	// may come before the fetch of the aborted transaction is emitted.
	var id checkpoint.ID
	var at Offsets
	waitFor(t, "a barrier at the log end (7)", func() bool {
		rec.mu.Lock()
		n := len(rec.barriers)
		if n > 0 {
			at = rec.barriers[n-1].offsets
		}
		rec.mu.Unlock()
		if o, _ := at.Lookup(topic, 0); o == 7 {
			return true
		}
		if n == int(id) {
			id++
			r.Trigger(id, time.Now())
		}
		return false
	})
	stop()
	var got []string
	for _, r := range rec.records {
		got = append(got, string(r.Value))
	}
	if want := "true-0 true-1 true-2"; strings.Join(got, " ") != want {
		t.Fatalf("records %q, want %s", got, want)
	}
	// The markers moved the position's leader epoch along (epoch.go), and
	// the broker's answer for it holds the position: a restore from it is
	// not a truncated log.
	if e, ok := r.epochs.Lookup(topic, 0); !ok || e != 0 {
		t.Fatalf("the position's leader epoch: %d (%v), want 0, the markers'", e, ok)
	}
	epochs := r.epochs.Clone()

	adm := kafkatest.Admin(t, b)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: -1}) // retention, to the log end
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	restored, err := Open(ctx, cfg, &position{Offsets: at, Epochs: epochs}, testLog(t))
	if err != nil {
		t.Fatalf("restore at %s after retention: %v", at, err)
	}
	restored.Close()
}

// TestStartLatestIsBeforeATransactionOpenAtTheStart: start_offset latest
// with a transaction open (records 2-4 of a partition, after 0-1) starts at
// the last stable offset, 2, as the Java consumer does under
// read_committed; from the high watermark, 5, the transaction was read
// from its middle once it committed: a part of it in the output.
func TestStartLatestIsBeforeATransactionOpenAtTheStart(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 2)
	ctx := context.Background()
	p := txnProducer(t, b, topic)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("txn-%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(b, topic)
	cfg.StartOffset = StartLatest
	s := openSource(t, cfg)
	if got, want := s.readers[0].positions.String(), topic+"/0=2"; got != want {
		t.Fatalf("starts at %s, want %s (the last stable offset, before the open transaction)", got, want)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	rec, stop := runReader(t, s.readers[0])
	waitFor(t, "the transaction's 3 records", func() bool { return rec.count() == 3 })
	stop()
	for i, r := range rec.records {
		if want := fmt.Sprintf("txn-%d", i); string(r.Value) != want {
			t.Errorf("record %d: %q, want %q", i, r.Value, want)
		}
	}
}

// txnProducer is a transactional producer to partition 0 of topic, closed
// when the test ends.
func txnProducer(t *testing.T, b kafkatest.Brokers, topic string) *kgo.Client {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(topic+"-txn"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
