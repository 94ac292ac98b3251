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
	b, err := encodePosition(o, map[string]kadm.TopicID{"orders": {1, 2, 3}})
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
	pos, err := encodePosition(o, s.ids)
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

// TestAPositionMovesPastTheMarkersAfterItsLastRecord: a partition whose log
// ends with transactions' markers (a committed transaction, records 0-2 and
// its marker 3; an aborted one, records 4-5 and marker 6). Once the fetch
// holding them was emitted, a barrier's position is the log end, 7, not 3,
// the offset after the last record: there, once retention had deleted the
// whole log, a restore was refused as 4 records lost though every
// committed record had been read (and the partition's lag stayed above 0).
func TestAPositionMovesPastTheMarkersAfterItsLastRecord(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	ctx := context.Background()
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(topic+"-txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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

	adm := kafkatest.Admin(t, b)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: -1}) // retention, to the log end
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	restored, err := Open(ctx, cfg, &position{Offsets: at}, testLog(t))
	if err != nil {
		t.Fatalf("restore at %s after retention: %v", at, err)
	}
	restored.Close()
}
