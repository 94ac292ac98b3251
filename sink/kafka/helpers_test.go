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

// committedValues reads the topic as a read_committed consumer does, until
// it saw want records or nothing came for a while, and returns the values
// sorted.
func committedValues(t *testing.T, b kafkatest.Brokers, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 && (len(out) >= want || pctx.Err() != nil) {
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
