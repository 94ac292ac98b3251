package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

func produceRaw(t *testing.T, b kafkatest.Brokers, topic string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(context.Background(), kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

const filterIDExists = "{type: filter, condition: {field: id, op: exists}}"

func TestUndecodableRecordsAreSkippedAndCounted(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{transforms: filterIDExists, pipeline: "on_decode_error: {policy: skip}"})
	produceIDs(t, b, topic, 0, 50)
	produceRaw(t, b, topic, "not json", "{broken")
	produceIDs(t, b, topic, 50, 100)
	r := start(t, cfg)
	waitAll(t, outDir(cfg), 100)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), 100)
	if n := r.counter("connector_records_skipped_total"); n != 2 {
		t.Errorf("skipped %d records, want 2", n)
	}
}

func TestUndecodableRecordsGoToTheDeadLetterTopicWithTheirOrigin(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	dlq := kafkatest.Topic(t, b, 1)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{transforms: filterIDExists,
		pipeline: "on_decode_error: {policy: dead_letter, topic: " + dlq + "}"})
	produceIDs(t, b, topic, 0, 50)
	produceRaw(t, b, topic, "not json")
	produceIDs(t, b, topic, 50, 100)
	r := start(t, cfg)
	waitAll(t, outDir(cfg), 100)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), 100)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fs := cl.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) < 1 {
		t.Fatalf("dead-letter topic holds %d records, want at least 1 (errors: %v)", len(recs), fs.Errors())
	}
	got := recs[0]
	headers := map[string]string{}
	for _, h := range got.Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(got.Value) != "not json" || headers["connector.source.topic"] != topic || headers["connector.source.offset"] != "50" || headers["connector.error"] == "" {
		t.Errorf("dead letter %q with headers %v: want the original value, its origin (%s@50) and the error", got.Value, headers, topic)
	}
}

func TestUndecodableRecordFailsTheJobUnderPolicyFail(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{transforms: filterIDExists})
	cfg.Restart.MaxFailures = 2
	produceRaw(t, b, topic, "not json")
	r := start(t, cfg)
	select {
	case err := <-r.done:
		r.done <- err
		if !errors.Is(err, ErrTooManyFailures) {
			t.Fatalf("job ended with %v, want ErrTooManyFailures", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("job kept running on a record it cannot decode under policy fail")
	}
	if n := len(visibleIDs(t, outDir(cfg))); n != 0 {
		t.Errorf("%d records visible, want none", n)
	}
}
