package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/source"
)

// restoredStart is where the opened source's readers start partition p of
// topic.
func restoredStart(t *testing.T, s *Source, topic string, p int32) int64 {
	t.Helper()
	for _, r := range s.readers {
		if n, ok := r.positions.Lookup(topic, p); ok {
			return n
		}
	}
	t.Fatalf("no reader owns %s/%d", topic, p)
	return 0
}

// TestRestoreATopicRemovedAndAddedBackResumesWhereItsLastCheckpointLeftIt:
// checkpoint n of a job reading [a, tt] completed with tt/0 at 10 (its
// output, records 0..9 of tt, committed in the sink), but the process died
// before n's offsets reached the group (the group still says 5, n-1's):
// the restart's commitRestoredPositions is what repairs that. The operator
// removes tt from source.topics and restarts: the restore commits n's
// positions, but Source.Commit left out tt ("a topic the job no longer
// reads"), so the group kept 5 while nothing else remembered 10 (the
// checkpoints of this run hold only a). tt added back later started at the
// group's 5: records 5..9 of tt reached the sink a second time.
func TestRestoreATopicRemovedAndAddedBackResumesWhereItsLastCheckpointLeftIt(t *testing.T) {
	ctx := context.Background()
	b := kafkatest.Cluster(t)
	a := kafkatest.Topic(t, b, 1)
	tt := kafkatest.Topic(t, b, 1)
	produce(t, b, tt, 1, 20)
	group := tt + "-g"
	adm := kafkatest.Admin(t, b)
	stale := kadm.Offsets{}
	stale.Add(kadm.Offset{Topic: tt, Partition: 0, At: 5, LeaderEpoch: -1}) // checkpoint n-1's commit
	if err := adm.CommitAllOffsets(ctx, group, stale); err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopics(ctx, a, tt)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]kadm.TopicID{a: details[a].ID, tt: details[tt].ID}

	// Checkpoint n: a/0 at 0, tt/0 at 10.
	atN := Offsets{}
	atN.Set(a, 0, 0)
	atN.Set(tt, 0, 10)
	posN, err := encodePosition(atN, nil, ids)
	if err != nil {
		t.Fatal(err)
	}

	// Restart 1: tt removed from source.topics; the restore re-commits
	// checkpoint n's positions (pipeline.commitRestoredPositions).
	cfg := Options{Brokers: b.Addrs, Topics: []string{a}, Group: group, BatchSize: 64}
	restored, err := mergePositions([]source.Position{posN})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := Open(ctx, cfg, &restored, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Commit(ctx, []source.Position{posN}); err != nil {
		t.Fatal(err)
	}
	// This run's checkpoint m holds only a.
	atM := Offsets{}
	atM.Set(a, 0, 0)
	posM, err := encodePosition(atM, nil, ids)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Commit(ctx, []source.Position{posM}); err != nil {
		t.Fatal(err)
	}
	s1.Close()

	// Restart 2: tt added back, restoring checkpoint m.
	cfg.Topics = []string{a, tt}
	restored, err = mergePositions([]source.Position{posM})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, cfg, &restored, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := restoredStart(t, s2, tt, 0); got != 10 {
		t.Fatalf("tt/0 added back starts at %d, but the last checkpoint that read it (its output in the sink) ended at 10: records %d..9 are written again", got, got)
	}
}

// TestRestoreALogTruncatedBelowItsPositionAndItsEndGoesOnWhereItDiverged:
// as TestARestoreFromALogTruncatedBelowItsPositionIsAPositionLost (an
// unclean election cut the log back to 10, where epoch 0 ends), but the
// new leader has taken only 3 records since (offsets 10-12, epoch 1), so
// the log ends at 13, below the checkpoint's 15. checkRestored classes the
// position "beyond the log end" and sends it to the log start, without
// asking where its epoch ends (checkEpochs only sees the others): under
// on_position_lost: earliest the partition is read again from 0, and the
// 10 records 0..9, read and written before the checkpoint, are written a
// second time. README: "earliest goes on from where the log diverged".
func TestRestoreALogTruncatedBelowItsPositionAndItsEndGoesOnWhereItDiverged(t *testing.T) {
	c, b := fakeCluster(t, 2)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 10) // offsets 0-9, epoch 0
	to := int32(0)
	if c.LeaderFor(topic, 0) == 0 {
		to = 1
	}
	if err := c.MoveTopicPartition(topic, 0, to); err != nil {
		t.Fatal(err)
	}
	produce(t, b, topic, 1, 3) // offsets 10-12, epoch 1: the log ends at 13
	cfg := testConfig(b, topic)
	cfg.OnPositionLost = PositionLostEarliest
	s, err := Open(context.Background(), cfg, &position{Offsets: Offsets{topic: {0: 15}}, Epochs: Offsets{topic: {0: 0}}}, testLog(t))
	if err != nil {
		t.Fatalf("restore under on_position_lost: earliest: %v", err)
	}
	defer s.Close()
	if at, _ := s.readers[0].positions.Lookup(topic, 0); at != 10 {
		t.Fatalf("the truncated partition goes on from %d, want 10, where its log diverged (epoch 0 ends there): records %d..9 are written again", at, at)
	}
}
