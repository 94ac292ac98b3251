package config

import (
	"reflect"
	"testing"
	"time"
)

// TestMinimalFileGetsDesignDefaults: the four required keys are enough, and
// the rest are DESIGN.md's values.
func TestMinimalFileGetsDesignDefaults(t *testing.T) {
	j := mustParse(t, doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: file, path: ./out}"), nil)
	want := Job{
		Name:   "orders",
		Kafka:  Kafka{Brokers: []string{"localhost:9092"}, ClientID: "orders"},
		Source: Source{Topics: []string{"orders"}, Group: "orders", StartOffset: Earliest, FetchMaxBytes: 50 * MiB, FetchMaxPartitionBytes: 512 * KiB},
		Checkpoint: Checkpoint{
			Interval: time.Second, Timeout: 60 * time.Second, MinPause: 0, MaxConcurrent: 1, Retained: 3,
			Mode: ExactlyOnce, Dir: "./data/checkpoints", InitialDelay: time.Second, TolerableFailures: 5,
		},
		State:    State{Dir: "./data/state", FullSnapshotAfter: 64 * MiB},
		Pipeline: Pipeline{Parallelism: 1, ChannelCapacity: 1024, OnDecodeError: OnDecodeError{Policy: DecodeFail}},
		Sink:     Sink{Type: SinkFile, Path: "./out", Format: FormatJSONL, RollSize: 128 * MiB, RollAge: 5 * time.Minute},
		HTTP:     HTTP{Addr: "127.0.0.1:8080"},
		Restart:  Restart{MaxFailures: 5, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
	}
	want.src = j.src
	if !reflect.DeepEqual(*j, want) {
		t.Errorf("defaults\n got: %+v\nwant: %+v", *j, want)
	}
}

func TestDefaultsDependOnSinkType(t *testing.T) {
	k := mustParse(t, doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: kafka, topic: out}"), nil)
	if k.Sink.TransactionTimeout != 10*time.Minute || k.Sink.Format != "" || k.Sink.RollSize != 0 {
		t.Errorf("kafka sink defaults: %+v", k.Sink)
	}
	p := mustParse(t, doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: postgres, dsn: postgres://u:pw@db/x, table: orders}"), nil)
	if p.Sink.Mode != Postgres2PC {
		t.Errorf("postgres sink mode = %q, want 2pc", p.Sink.Mode)
	}
}

func TestExplicitValuesBeatDefaults(t *testing.T) {
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092], client_id: me}",
		"source: {topics: [orders], group: g2, start_offset: latest}",
		"checkpoint: {initial_delay: 0s, min_pause: 200ms, tolerable_failures: 0}",
		"pipeline:",
		"  transforms: [{type: dedup, key: id, ttl: 1h}]",
		"sink: {type: stdout, format: raw}",
	), nil)
	if j.Kafka.ClientID != "me" || j.Source.Group != "g2" || j.Source.StartOffset != Latest {
		t.Errorf("strings: %+v %+v", j.Kafka, j.Source)
	}
	if j.Checkpoint.InitialDelay != 0 || j.Checkpoint.MinPause != 200*time.Millisecond || j.Checkpoint.TolerableFailures != 0 {
		t.Errorf("an explicit zero must stay zero: %+v", j.Checkpoint)
	}
	if j.Pipeline.Transforms[0].Dedup.TTL != time.Hour || j.Sink.Format != FormatRaw {
		t.Errorf("ttl/format: %+v %+v", j.Pipeline.Transforms[0].Dedup, j.Sink)
	}
}

// TestJobBuiltInCodeGetsTheSameDefaults: FillDefaults on a Job literal gives
// what Load gives for the same minimal file, and Validate checks it.
func TestJobBuiltInCodeGetsTheSameDefaults(t *testing.T) {
	fromFile := mustParse(t, doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: stdout}"), nil)
	inCode := &Job{
		Name:   "orders",
		Kafka:  Kafka{Brokers: []string{"localhost:9092"}},
		Source: Source{Topics: []string{"orders"}},
		Sink:   Sink{Type: SinkStdout},
	}
	inCode.FillDefaults()
	if err := inCode.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	inCode.src = fromFile.src
	if !reflect.DeepEqual(inCode, fromFile) {
		t.Errorf("\nin code: %+v\nfrom file: %+v", inCode, fromFile)
	}

	inCode.Pipeline.Parallelism = -1
	if err := inCode.Validate(); err == nil {
		t.Errorf("Validate accepted parallelism -1")
	}
	bad := &Job{Kafka: Kafka{Brokers: []string{"b:9092"}}, Source: Source{Topics: []string{"t"}}, Sink: Sink{Type: SinkStdout}}
	bad.FillDefaults()
	if err := bad.Validate(); err == nil || err.Error() != "name: is required" {
		t.Errorf("Validate without a file: %v, want %q", err, "name: is required")
	}
}
