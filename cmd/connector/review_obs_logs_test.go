package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/syncbuf"
)

// reviewLogJob is a Kafka-to-Kafka job with a dedup and a dead-letter
// topic, so that the source, the transforms, the state, the transactional
// sink and the bad-record policy all log.
const reviewLogJob = `
name: review-logs
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {interval: 100ms, dir: %q}
state: {dir: %q}
pipeline:
  parallelism: 2
  key_by: id
  on_decode_error: {policy: dead_letter, topic: %q}
  transforms:
    - {type: dedup, key: id, ttl: 10m}
sink: {type: kafka, topic: %q}
http: {addr: "127.0.0.1:0"}
`

// TestReviewObsEveryLogLineIsOneJSONObjectWithUniqueKeys (passes: a
// confirmation): a job that reads, deduplicates, dead-letters and commits
// Kafka transactions, logged at debug, writes only lines that are one JSON
// object each, with a known level and no key twice (a key written twice is
// read as the last one by most collectors and refused by some).
func TestReviewObsEveryLogLineIsOneJSONObjectWithUniqueKeys(t *testing.T) {
	b := kafkatest.Fake(t)
	in := kafkatest.Topic(t, b, 3)
	out := kafkatest.Topic(t, b, 3)
	dlq := kafkatest.Topic(t, b, 1)
	dir := t.TempDir()
	cfg := parseReviewJob(t, fmt.Sprintf(reviewLogJob, b.Addrs[0], in, dir+"/chk", dir+"/state", dlq, out))

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 200 {
		v := fmt.Sprintf(`{"id":%d}`, i%150)
		if i%20 == 0 {
			v = "not json"
		}
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var logs syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- runJob(ctx, cfg, zerolog.New(&logs).Level(zerolog.DebugLevel).With().Timestamp().Logger(), newRegistry(), func(a string) { addr <- a })
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/metrics"
	case err := <-done:
		t.Fatalf("the job stopped before it served: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, s := scrape(t, url)
		if sum(s, "connector_records_dead_lettered_total") == 10 && sum(s, "connector_checkpoints_completed_total") >= 3 &&
			sum(s, "connector_sink_transactions_committed_total") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not dead-letter 10 records and commit within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("job: %v", err)
	}
	checkLogLines(t, logs.String())
}

func parseReviewJob(t *testing.T, y string) *config.Job {
	t.Helper()
	cfg, err := config.Parse("job.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkLogLines fails the test for every line of text that is not one JSON
// object with a known level, or that holds a key twice.
func checkLogLines(t *testing.T, text string) {
	t.Helper()
	levels := map[string]bool{"debug": true, "info": true, "warn": true, "error": true}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		n++
		keys, err := topLevelKeys(line)
		if err != nil {
			t.Errorf("line %d is not one JSON object (%v): %s", n, err, line)
			continue
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("line %d holds key %q twice: %s", n, k, line)
			}
			seen[k] = true
		}
		var ev struct {
			Level string `json:"level"`
		}
		_ = json.Unmarshal(line, &ev)
		if !levels[ev.Level] {
			t.Errorf("line %d has level %q: %s", n, ev.Level, line)
		}
	}
	if n == 0 {
		t.Error("no log line")
	}
}

// topLevelKeys returns the keys of the JSON object line, in order, repeats
// included.
func topLevelKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more after the object")
	}
	return keys, nil
}
