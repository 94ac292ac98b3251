package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/internal/syncbuf"
)

// TestReviewObsSkippedRecordsDoNotLogOneWarningEach: under
// on_decode_error: skip, a stream of undecodable records (a producer's bug
// sending text instead of JSON: every record bad, at the topic's full rate)
// is counted in connector_records_skipped_total, and logged in a bounded
// way (the first ones, then a summary now and then), not one warning per
// record: 5,000 bad records must not write 5,000 log lines, or the log
// volume follows the input's rate and drowns every other line (and the
// collector's budget).
func TestReviewObsSkippedRecordsDoNotLogOneWarningEach(t *testing.T) {
	const bad = 5000
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{
		transforms: "{type: filter, condition: {field: id, op: exists}}",
		pipeline:   "on_decode_error: {policy: skip}",
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, bad)
	for i := range recs {
		recs[i] = kgo.StringRecord(fmt.Sprintf("not json %d", i))
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var logs syncbuf.Buffer
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	j := New(cfg, Options{Registry: reg, Log: zerolog.New(&logs).Level(zerolog.InfoLevel), DiscoverEvery: 500 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("job: %v", err)
		}
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := metrics.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := s.Sum("connector_records_skipped_total"); v == bad {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every bad record was skipped within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := logs.Count("skipping a record that cannot be processed"); n > 100 {
		t.Errorf("%d bad records skipped wrote %d warnings, one per record: the log volume follows the bad input's rate", bad, n)
	}
}
