package kafka

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

var ctx = context.Background()

// testSink makes a kafka sink of a fresh job writing to a fresh topic.
func testSink(t *testing.T, b kafkatest.Brokers, job, topic string, mod func(*Config)) *Sink {
	t.Helper()
	cfg := Config{Topic: topic}
	if err := spec.Fill(&cfg, "", nil); err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(&cfg)
	}
	j := &config.Job{Name: job, Kafka: config.Kafka{Brokers: b.Addrs, ClientID: job}}
	j.Checkpoint.Config = checkpoint.DefaultConfig()
	s, err := New(cfg, sink.Env{Job: j, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func recover_(t *testing.T, s *Sink, cs []sink.Committable) {
	t.Helper()
	if err := s.Recover(ctx, cs); err != nil {
		t.Fatalf("Recover: %v", err)
	}
}

func newTestWriter(t *testing.T, s *Sink, i int) sink.Writer {
	t.Helper()
	w, err := s.NewWriter(i)
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the sink and the cluster (cleanups run last first), so
	// that no client of the writer outlives the test (a franz-go client
	// logging after it ended panics the test binary).
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func write(t *testing.T, w sink.Writer, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		r := record.Record{Topic: "in", Partition: int32(i % 3), Offset: int64(i), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id":%d}`, i)}
		if err := w.Write(ctx, &r); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

func preCommit(t *testing.T, w sink.Writer, id checkpoint.ID) []sink.Committable {
	t.Helper()
	cs, err := w.PreCommit(ctx, id)
	if err != nil {
		t.Fatalf("PreCommit(%d): %v", id, err)
	}
	return cs
}

// committedValues reads the topic as a read_committed consumer does and
// returns the values sorted. It reads every partition at least to its last
// stable offset as the brokers give it at the call (so "none visible" is
// decided by the offsets, not by how much a poll of a few seconds happened
// to bring), and then on until it saw want records and nothing came for a
// while. It fails the test when it cannot reach those offsets within a
// minute.
func committedValues(t *testing.T, b kafkatest.Brokers, topic string, want int) []string {
	t.Helper()
	lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
	lso, err := kafkatest.Admin(t, b).ListCommittedOffsets(lctx, topic)
	lcancel()
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, err)
	}
	// Control records (transaction markers) are kept for their offsets
	// only: the last record below a last stable offset may be a marker.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	behind := func() string {
		for p, o := range lso[topic] {
			if next[p] < o.Offset {
				return fmt.Sprintf("partition %d read to %d of its last stable offset %d", p, next[p], o.Offset)
			}
		}
		return ""
	}
	deadline := time.Now().Add(time.Minute)
	var out []string
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			n++
			if !r.Attrs.IsControl() {
				out = append(out, string(r.Value))
			}
		})
		lag := behind()
		if lag != "" && time.Now().After(deadline) {
			t.Fatalf("read_committed read of %s: %s after a minute", topic, lag)
		}
		if n == 0 && lag == "" && (len(out) >= want || pctx.Err() != nil) {
			break
		}
	}
	sort.Strings(out)
	return out
}

// values are the values write(from, to) writes, sorted as committedValues.
func values(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf(`{"id":%d}`, i))
	}
	sort.Strings(out)
	return out
}

func recordOf(value []byte) *record.Record { return &record.Record{Topic: "in", Value: value} }

// txnOf is the transactional id a committable names.
func txnOf(t *testing.T, c sink.Committable) string {
	t.Helper()
	seg, err := decodeSegment(c)
	if err != nil {
		t.Fatal(err)
	}
	return seg.TxnID
}
