package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
	_ "github.com/connector-dev/connector/internal/builtin" // the kafka sink's config
)

// TestLatencyValueCarriesIdAndProduceTime: a latency run's value is valid
// JSON of latencySize bytes whose id the output check reads (lineID) and
// whose produce time the latency reader reads back.
func TestLatencyValueCarriesIdAndProduceTime(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC).UnixNano()
	v := latencyValue(nil, 42, at)
	if len(v) != latencySize || !json.Valid(v) {
		t.Fatalf("value %q: %d bytes, valid JSON %v; want %d bytes of JSON", v, len(v), json.Valid(v), latencySize)
	}
	if id, ok := lineID(v); !ok || id != 42 {
		t.Errorf("lineID = %d, %v; want 42", id, ok)
	}
	if got, ok := producedAt(v); !ok || got != at {
		t.Errorf("producedAt = %d, %v; want %d", got, ok, at)
	}
	if _, ok := producedAt([]byte(`{"id":"r0000000042","u":"u0000042"}`)); ok {
		t.Error("producedAt read a time from a value of the load")
	}
}

// TestDrainEndsWhenEveryPartitionsLSOPassedItsLastRecord: the drain's end
// is the first sample at which every partition with output is committed up
// to its last record; commit markers alone do not count.
func TestDrainEndsWhenEveryPartitionsLSOPassedItsLastRecord(t *testing.T) {
	last := map[int32]int64{0: 9, 2: 4}
	for _, c := range []struct {
		lso  []int64
		want bool
	}{
		{[]int64{10, 0, 5}, true},
		{[]int64{9, 0, 5}, false}, // the last record of partition 0 is not committed
		{[]int64{12, 3, 4}, false},
		{[]int64{10}, false}, // partition 2 not listed
	} {
		if got := past(c.lso, last); got != c.want {
			t.Errorf("past(%v) = %v, want %v", c.lso, got, c.want)
		}
	}
}

// TestK2KConnectorConfigIsValid: the job file the bench writes for
// connector-k2k passes the connector's own validation, with the Kafka sink
// on the run's output topic.
func TestK2KConnectorConfigIsValid(t *testing.T) {
	s := spec{label: "connector-k2k", kind: "connector", topic: topic{Name: "bench-k2k-v2-100b-500000", Records: 500000, Size: 100},
		parallelism: 2, mode: "exactly_once", interval: time.Second, k2k: true, outTopic: "bench-k2k-out-x", fetchesInFlight: 3}
	text := connectorConfig(s, t.TempDir(), "127.0.0.1:0")
	if !strings.Contains(text, "type: kafka\n  topic: bench-k2k-out-x\n") {
		t.Errorf("config has no kafka sink on the output topic:\n%s", text)
	}
	if !strings.Contains(text, "\n  fetches_in_flight: 3\n") {
		t.Errorf("--fetches-in-flight 3: config has no fetches_in_flight: 3 in its source:\n%s", text)
	}
	s.fetchesInFlight = 0
	if d := connectorConfig(s, t.TempDir(), "127.0.0.1:0"); strings.Contains(d, "fetches_in_flight") {
		t.Errorf("--fetches-in-flight 0: config sets fetches_in_flight, want the connector's default:\n%s", d)
	}
	job, err := config.Parse("k2k.yaml", []byte(text), func(k string) (string, bool) {
		if k == "KAFKA_BROKERS" {
			return "127.0.0.1:9092", true
		}
		return "", false
	})
	if err != nil {
		t.Fatalf("config does not parse: %v\n%s", err, text)
	}
	if job.Sink.Type != "kafka" {
		t.Errorf("sink type %q, want kafka", job.Sink.Type)
	}
}
