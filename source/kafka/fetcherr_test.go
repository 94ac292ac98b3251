package kafka

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/source"
)

// fetchAnswered opens a source on a one-partition topic of a kfake
// cluster whose every Fetch is answered with the partition as part
// makes it (from one with no error and no records), and returns the error
// its reader stops with, failing if it still runs after 20 s.
func fetchAnswered(t *testing.T, part func(rp *kmsg.FetchResponseTopicPartition), why string) error {
	t.Helper()
	c, b := fakeCluster(t, 1)
	topic := kafkatest.Topic(t, b, 1)
	c.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(req.GetVersion()) // 12 or 13: PreferredReadReplica came in 11
		for _, rt := range req.Topics {
			ft := kmsg.NewFetchResponseTopic()
			ft.Topic, ft.TopicID = rt.Topic, rt.TopicID
			for _, p := range rt.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.HighWatermark, rp.LastStableOffset = p.Partition, 10, 10
				part(&rp)
				ft.Partitions = append(ft.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, ft)
		}
		return resp, nil, true
	})
	s := openSource(t, testConfig(b, topic))
	return runUntilError(t, s.readers[0], why)
}

// TestACorruptLogAtTheFetchedOffsetStopsTheReader: a leader that answers
// CORRUPT_MESSAGE for a partition (its log is corrupt at the fetched
// offset) answers it again on every retry; Kafka calls the error
// retriable, and the fetcher asked again, forever. Now Run returns it (the
// job restarts, up to max_failures), naming the partition and offset.
func TestACorruptLogAtTheFetchedOffsetStopsTheReader(t *testing.T) {
	err := fetchAnswered(t, func(rp *kmsg.FetchResponseTopicPartition) {
		rp.ErrorCode = kerr.CorruptMessage.Code
	}, "it fetches a corrupt log again and again")
	if !errors.Is(err, errCorrupt) || !errors.Is(err, kerr.CorruptMessage) || !strings.Contains(err.Error(), "/0 from offset 0") {
		t.Fatalf("Run = %v, want the corrupt log, its partition and offset", err)
	}
	if errors.Is(err, source.ErrPermanent) {
		t.Errorf("Run = %v: a corrupt log stops the job, though another replica may lead the partition after a restart", err)
	}
}

// TestALeaderThatNamesAnotherReplicaToFetchFromStopsTheReader: a leader
// that sends no records of a partition but names a follower to fetch it
// from (a replica.selector.class) was asked again at round-trip pace,
// forever; the source fetches from leaders only, and stops the job saying
// so (no restart changes the cluster's selector).
func TestALeaderThatNamesAnotherReplicaToFetchFromStopsTheReader(t *testing.T) {
	err := fetchAnswered(t, func(rp *kmsg.FetchResponseTopicPartition) {
		rp.PreferredReadReplica = 7
	}, "it asks the leader again and again")
	if !errors.Is(err, errReadReplica) || !errors.Is(err, source.ErrPermanent) || !strings.Contains(err.Error(), "replica 7") {
		t.Fatalf("Run = %v, want a permanent refusal to fetch from replica 7", err)
	}
}
