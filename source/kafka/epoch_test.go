package kafka

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/source"
)

// epochTopic makes a one-partition topic on a kfake cluster of two
// brokers whose offsets 0-9 are of leader epoch 0 and 10-19 of leader
// epoch 1: the partition moved to the other broker between them. A reader
// that read offsets 10-14 in epoch 0, from a leader whose log an unclean
// election then cut back to 10, left a position of 15 in epoch 0: the new
// leader's log ends epoch 0 at 10, and its offsets 10-19 hold other
// records.
func epochTopic(t *testing.T) (*kfake.Cluster, kafkatest.Brokers, string) {
	t.Helper()
	c, b := fakeCluster(t, 2)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 10)
	to := int32(0)
	if c.LeaderFor(topic, 0) == 0 {
		to = 1
	}
	if err := c.MoveTopicPartition(topic, 0, to); err != nil {
		t.Fatal(err)
	}
	produce(t, b, topic, 1, 10)
	return c, b, topic
}

// TestARestoreFromALogTruncatedBelowItsPositionIsAPositionLost: a
// checkpoint's position past where the leader's log ends the epoch it was
// read in (the log was truncated below it, and new records took the
// offsets) is a position lost: under fail the restore stops, naming the
// partition, the offsets and why; under earliest the partition goes on
// from where the log diverged (10), so that the records written there
// since are read, not skipped. Positions in an epoch the log holds past
// them, or without an epoch (checkpoints of versions before), go on from
// where they were.
func TestARestoreFromALogTruncatedBelowItsPositionIsAPositionLost(t *testing.T) {
	_, b, topic := epochTopic(t)
	cfg := testConfig(b, topic)
	restore := func(cfg Options, epochs Offsets) (*Source, error) {
		s, err := Open(context.Background(), cfg, &position{Offsets: Offsets{topic: {0: 15}}, Epochs: epochs}, testLog(t))
		if err == nil {
			t.Cleanup(s.Close)
		}
		return s, err
	}

	_, err := restore(cfg, Offsets{topic: {0: 0}})
	if !errors.Is(err, source.ErrPermanent) || !strings.Contains(err.Error(), topic+"/0: the log was truncated below offset 15") ||
		!strings.Contains(err.Error(), "leader epoch 0") || !strings.Contains(err.Error(), "ends at offset 10") {
		t.Fatalf("restore of offset 15 in epoch 0 (which ends at 10) under on_position_lost: fail: %v, want the truncated log named", err)
	}

	earliest := cfg
	earliest.OnPositionLost = PositionLostEarliest
	s, err := restore(earliest, Offsets{topic: {0: 0}})
	if err != nil {
		t.Fatalf("restore under on_position_lost: earliest: %v", err)
	}
	if at, _ := s.readers[0].positions.Lookup(topic, 0); at != 10 {
		t.Fatalf("under earliest the truncated partition goes on from %d, want 10, where its log diverged", at)
	}
	if e, ok := s.readers[0].epochs.Lookup(topic, 0); !ok || e != 0 {
		t.Errorf("its epoch: %d (%v), want 0, the epoch that ends at 10", e, ok)
	}
	rec, stop := runReader(t, s.readers[0])
	waitFor(t, "the 10 records written after the cut", func() bool { return rec.count() >= 10 })
	stop()
	if n, first := rec.count(), rec.records[0].Offset; n != 10 || first != 10 {
		t.Errorf("read %d records from offset %d, want the 10 from 10", n, first)
	}

	for _, c := range []struct {
		name   string
		epochs Offsets
	}{
		{"epoch 1, which the log holds past 15", Offsets{topic: {0: 1}}},
		{"no epoch (a checkpoint of a version before)", nil},
	} {
		s, err := restore(cfg, c.epochs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if at, _ := s.readers[0].positions.Lookup(topic, 0); at != 15 {
			t.Errorf("%s: restored at %d, want 15", c.name, at)
		}
	}
}

// TestAPositionRecordsTheEpochOfTheBatchItFollows: a barrier's position
// carries, for each partition, the leader epoch of the last batch read,
// and the fetches send it (LastFetchedEpoch) so that the leader can say
// its log diverged from it.
func TestAPositionRecordsTheEpochOfTheBatchItFollows(t *testing.T) {
	c, b, topic := epochTopic(t)
	sent := make(chan int32, 64)
	c.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range r.(*kmsg.FetchRequest).Topics {
			for _, rp := range rt.Partitions {
				if rp.FetchOffset == 20 {
					select {
					case sent <- rp.LastFetchedEpoch:
					default:
					}
				}
			}
		}
		return nil, nil, false
	})
	s := openSource(t, testConfig(b, topic))
	r := s.readers[0]
	rec, stop := runReader(t, r)
	waitFor(t, "20 records", func() bool { return rec.count() >= 20 })
	select {
	case e := <-sent:
		if e != 1 {
			t.Errorf("the fetch from offset 20 sent LastFetchedEpoch %d, want 1", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no fetch from offset 20 within 20 s of reading the 20 records")
	}
	stop()
	pos, err := encodePosition(r.positions, r.epochs, r.ids)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodePosition(pos)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Offsets.Lookup(topic, 0); n != 20 {
		t.Fatalf("position %d, want 20", n)
	}
	if e, ok := p.Epochs.Lookup(topic, 0); !ok || e != 1 {
		t.Fatalf("position's epoch %d (%v), want 1, the last batch's", e, ok)
	}
}

// TestALeaderWhoseLogDivergedFromWhatWasReadStopsTheReader: a leader that
// answers a fetch with where its log diverged from the last epoch read
// (DivergingEpoch) stops the reader (the job restarts from its last
// checkpoint, whose restore checks its epochs) instead of going on past
// the cut and skipping the records written there since.
func TestALeaderWhoseLogDivergedFromWhatWasReadStopsTheReader(t *testing.T) {
	c, b, topic := epochTopic(t)
	c.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.FetchRequest)
		if req.Topics[0].Partitions[0].LastFetchedEpoch != 0 {
			return nil, nil, false // as kfake answers (it does not check)
		}
		return divergingAnswer(req, 0, 8), nil, true // cut back to 8 since the restore
	})
	s, err := Open(context.Background(), testConfig(b, topic), &position{Offsets: Offsets{topic: {0: 10}}, Epochs: Offsets{topic: {0: 0}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	err = runUntilError(t, s.readers[0], "it reads on past where the log diverged")
	if !errors.Is(err, errDiverged) || !strings.Contains(err.Error(), "/0 from offset 10") || !strings.Contains(err.Error(), "ends at offset 8") {
		t.Fatalf("Run = %v, want the diverged log, its partition and offsets", err)
	}
	if errors.Is(err, source.ErrPermanent) {
		t.Errorf("Run = %v: permanent, but the restart's restore decides (on_position_lost)", err)
	}
}

// TestALeaderThatDoesNotKnowTheEpochButReachesThePositionIsFollowed: a
// leader whose log reaches the fetched offset in an earlier epoch than the
// one sent (it never had that epoch's batches: compacted away before it
// copied the log) answers with DivergingEpoch all the same. The log was
// not cut below the position: the reader takes the leader's epoch and
// reads on, as the restore's check lets it (the Java consumer checks the
// end offset only), rather than stop at every restart.
func TestALeaderThatDoesNotKnowTheEpochButReachesThePositionIsFollowed(t *testing.T) {
	c, b, topic := epochTopic(t)
	var mu sync.Mutex
	var sent []int32
	c.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.FetchRequest)
		rq := req.Topics[0].Partitions[0]
		mu.Lock()
		sent = append(sent, rq.LastFetchedEpoch)
		mu.Unlock()
		if rq.LastFetchedEpoch != 1 || rq.FetchOffset != 15 {
			return nil, nil, false // kfake answers (it does not check)
		}
		return divergingAnswer(req, 0, 17), nil, true // no epoch 1; epoch 0 reaches past 15
	})
	s, err := Open(context.Background(), testConfig(b, topic), &position{Offsets: Offsets{topic: {0: 15}}, Epochs: Offsets{topic: {0: 1}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rec, stop := runReader(t, s.readers[0])
	waitFor(t, "the 5 records from 15", func() bool { return rec.count() >= 5 })
	stop()
	if first := rec.records[0].Offset; rec.count() != 5 || first != 15 {
		t.Errorf("read %d records from offset %d, want the 5 from 15", rec.count(), first)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) < 2 || sent[0] != 1 || sent[1] != 0 {
		t.Errorf("LastFetchedEpoch sent: %v, want 1, then the leader's 0", sent)
	}
}

// TestARestoreWhoseEpochTheLeaderDoesNotKnowTakesTheLeaders: a leader that
// does not know the restored position's epoch but reaches the position in
// an earlier one answers OffsetForLeaderEpoch with that epoch: the
// position holds, in the leader's epoch, which the fetches then send (a
// fetch with the old one would be answered with DivergingEpoch).
func TestARestoreWhoseEpochTheLeaderDoesNotKnowTakesTheLeaders(t *testing.T) {
	c, b, topic := epochTopic(t)
	c.ControlKey(kmsg.OffsetForLeaderEpoch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.OffsetForLeaderEpochRequest)
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		resp.SetVersion(req.GetVersion())
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, 0, 17 // no epoch 1; epoch 0 reaches past 15
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	s, err := Open(context.Background(), testConfig(b, topic), &position{Offsets: Offsets{topic: {0: 15}}, Epochs: Offsets{topic: {0: 1}}}, testLog(t))
	if err != nil {
		t.Fatalf("restore of offset 15 in an epoch the leader does not know, its log reaching 17: %v", err)
	}
	t.Cleanup(s.Close)
	if at, _ := s.readers[0].positions.Lookup(topic, 0); at != 15 {
		t.Errorf("restored at %d, want 15", at)
	}
	if e, ok := s.readers[0].epochs.Lookup(topic, 0); !ok || e != 0 {
		t.Errorf("the position's epoch: %d (%v), want the leader's 0", e, ok)
	}
}

// divergingAnswer answers a fetch of epochTopic's partition with no
// records and a DivergingEpoch: the leader's log has epoch up to end.
func divergingAnswer(req *kmsg.FetchRequest, epoch int32, end int64) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.GetVersion())
	ft := kmsg.NewFetchResponseTopic()
	ft.Topic, ft.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset = 20, 20
	rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = epoch, end
	ft.Partitions = append(ft.Partitions, rp)
	resp.Topics = append(resp.Topics, ft)
	return resp
}
