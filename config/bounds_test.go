package config_test

import (
	"encoding"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink/file"
)

const (
	maxInt64  = "9223372036854775807"
	years100  = "876000h"
	hugeBytes = "1000TiB"
)

// fileJob is minimal with a file sink, then more lines from line 5.
func fileJob(more ...string) []byte {
	return doc(append([]string{minimal[0], minimal[1], minimal[2], "sink: {type: file, path: ./out}"}, more...)...)
}

// absurdNumbers holds, for every numeric key of the core and of the
// built-in kinds, a file giving it an absurd value and the problems
// Parse must report.
var absurdNumbers = []struct {
	yaml []byte
	want string
}{
	{with("pipeline: {parallelism: " + maxInt64 + "}"),
		"config.yaml:5: pipeline.parallelism: must be at most 256, got " + maxInt64},
	{with("pipeline: {parallelism: 10000, max_parallelism: 32768}"),
		"config.yaml:5: pipeline.parallelism: must be at most 256, got 10000"},
	{with("pipeline: {max_parallelism: " + maxInt64 + "}"),
		"config.yaml:5: pipeline.max_parallelism: must be between 1 and 32768, got " + maxInt64},
	{with("pipeline: {channel_capacity: " + maxInt64 + "}"),
		"config.yaml:5: pipeline.channel_capacity: must be between 1 and 1048576, got " + maxInt64},
	{with("pipeline: {parallelism: 64, channel_capacity: 1048576}"),
		"config.yaml:5: pipeline.channel_capacity: 1048576 records in each of 64×64 channels is more than 67108864 in all; lower it or pipeline.parallelism"},
	{with("checkpoint: {interval: " + years100 + "}"),
		"config.yaml:5: checkpoint.interval: must be at most 168h0m0s, got 876000h0m0s\n" +
			"config.yaml:5: checkpoint.initial_delay: must be at most 168h0m0s, got 876000h0m0s"}, // its default is @interval
	{with("instances: {slots: " + maxInt64 + "}"),
		"config.yaml:5: instances.slots: must be between 1 and 1024, got " + maxInt64},
	{with("instances: {session_timeout: " + years100 + "}"),
		"config.yaml:5: instances.session_timeout: 876000h0m0s: must be between 1s and 30m (the broker's group.min/max.session.timeout.ms, 6s and 30m by default, apply too)"},
	{with("http: {stall_intervals: " + maxInt64 + "}"),
		"config.yaml:5: http.stall_intervals: must be between 0 and 604800, got " + maxInt64},
	{with("checkpoint: {timeout: " + years100 + "}"),
		"config.yaml:5: checkpoint.timeout: must be at most 168h0m0s, got 876000h0m0s"},
	{with("checkpoint: {min_pause: " + years100 + "}"),
		"config.yaml:5: checkpoint.min_pause: must be at most 168h0m0s, got 876000h0m0s"},
	{with("checkpoint: {initial_delay: " + years100 + "}"),
		"config.yaml:5: checkpoint.initial_delay: must be at most 168h0m0s, got 876000h0m0s"},
	{with("checkpoint: {max_concurrent: " + maxInt64 + "}"),
		"config.yaml:5: checkpoint.max_concurrent: must be between 1 and 100, got " + maxInt64},
	{with("checkpoint: {retained: " + maxInt64 + "}"),
		"config.yaml:5: checkpoint.retained: must be between 1 and 1000, got " + maxInt64},
	{with("checkpoint: {tolerable_failures: " + maxInt64 + "}"),
		"config.yaml:5: checkpoint.tolerable_failures: must be between 0 and 2147483647, got " + maxInt64},
	{with("restart: {max_failures: " + maxInt64 + "}"),
		"config.yaml:5: restart.max_failures: must be between 1 and 2147483647, got " + maxInt64},
	{with("restart: {initial_backoff: " + years100 + ", max_backoff: " + years100 + "}"),
		"config.yaml:5: restart.initial_backoff: must be at most 1h0m0s, got 876000h0m0s\n" +
			"config.yaml:5: restart.max_backoff: must be at most 1h0m0s, got 876000h0m0s"},
	{with("restart: {max_backoff: 2h}"),
		"config.yaml:5: restart.max_backoff: must be at most 1h0m0s, got 2h0m0s"},
	{with("state: {full_snapshot_after: " + hugeBytes + "}"),
		"config.yaml:5: state.full_snapshot_after: must be at most 64GiB, got 1000TiB"},
	{doc(minimal[0], minimal[1], "source: {topics: [orders], fetch_max_bytes: "+hugeBytes+", fetch_max_partition_bytes: 2GiB}", minimal[3]),
		"config.yaml:3: source.fetch_max_bytes: must be at most 1GiB, got 1000TiB\n" +
			"config.yaml:3: source.fetch_max_partition_bytes: must be at most 1GiB, got 2GiB"},
	{doc(minimal[0], minimal[1], "source: {topics: [orders], fetches_in_flight: "+maxInt64+"}", minimal[3]),
		"config.yaml:3: source.fetches_in_flight: must be between 1 and 16, got " + maxInt64},
	{doc(minimal[0], minimal[1], minimal[2], "sink: {type: file, path: ./out, roll_size: "+hugeBytes+", roll_age: "+years100+"}"),
		"config.yaml:4: sink.roll_size: must be at most 1TiB, got 1000TiB\n" +
			"config.yaml:4: sink.roll_age: must be at most 168h0m0s, got 876000h0m0s"},
	{doc(minimal[0], minimal[1], minimal[2], "sink: {type: file, path: ./out, format: parquet, parquet: {columns: [{name: id, type: int64}], row_group_size: "+hugeBytes+"}}"),
		"config.yaml:4: sink.parquet.row_group_size: must be at most 1GiB, got 1000TiB"},
	{doc(minimal[0], minimal[1], minimal[2], "sink: {type: file, path: ./out, max_open_files: "+maxInt64+"}"),
		"config.yaml:4: sink.max_open_files: must be at most 4096, got " + maxInt64},
	{with("pipeline: {transforms: [{type: dedup, key: id, ttl: " + years100 + "}]}"),
		"config.yaml:5: pipeline.transforms[0].ttl: 876000h0m0s: must be at most 8760h0m0s"},
	{with("pipeline: {parallelism: 99999999999999999999}"),
		`config.yaml:5: pipeline.parallelism: "99999999999999999999" is not an integer`},
	{with("checkpoint: {interval: 9999999999h}"),
		`config.yaml:5: checkpoint.interval: "9999999999h" is not a duration`},
	{with("state: {full_snapshot_after: 99999999TiB}"),
		`config.yaml:5: state.full_snapshot_after: "99999999TiB" is not a byte size`},
}

// TestEveryNumberHasAnUpperBound: each numeric key of the core and of the
// built-in kinds refuses an absurd value at validation, naming the key and
// its line, rather than passing it to run to panic, overflow or exhaust
// memory.
func TestEveryNumberHasAnUpperBound(t *testing.T) {
	for _, tc := range absurdNumbers {
		t.Run(strings.SplitN(string(tc.want), ": ", 3)[1], func(t *testing.T) {
			j, err := config.Parse("config.yaml", tc.yaml, env(nil))
			var errs config.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, %v; want config.Errors", j, err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("wrong message\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// TestEveryNumericKeyIsTested: a numeric key added to a config struct
// (of the core or of a built-in kind) needs an upper bound and a row in
// absurdNumbers; this test names the keys that have none.
func TestEveryNumericKeyIsTested(t *testing.T) {
	tested := map[string]bool{}
	for _, tc := range absurdNumbers {
		for _, line := range strings.Split(tc.want, "\n") {
			tested[strings.SplitN(line, ": ", 3)[1]] = true
		}
	}
	j := mustParse(t, fileJob("pipeline: {transforms: [{type: dedup, key: id}, {type: filter, condition: {field: id, op: exists}}, {type: project, keep: [id]}]}"), nil)
	for _, f := range spec.Fields(j, "") {
		if f.Value.Type().Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			continue // an enum, written as a word (checkpoint.mode)
		}
		switch f.Value.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			if !tested[f.Key] {
				t.Errorf("numeric key %s has no row in absurdNumbers", f.Key)
			}
		}
	}
}

// TestLargestSaneValuesPass: the bounds are far from what a job uses; the
// largest value of each still validates.
func TestLargestSaneValuesPass(t *testing.T) {
	mustParse(t, fileJob(
		"pipeline: {parallelism: 256, max_parallelism: 32768, channel_capacity: 1024}",
		"checkpoint: {interval: 168h, timeout: 168h, min_pause: 168h, initial_delay: 168h, max_concurrent: 100, retained: 1000, tolerable_failures: 2147483647}",
		"restart: {max_failures: 2147483647, initial_backoff: 1h, max_backoff: 1h}",
		"state: {full_snapshot_after: 64GiB}",
	), nil)
	mustParse(t, with("pipeline: {parallelism: 8, channel_capacity: 1048576, transforms: [{type: dedup, key: id, ttl: 8760h}]}"), nil)
	mustParse(t, doc(minimal[0], minimal[1], "source: {topics: [orders], fetches_in_flight: 16}", minimal[3]), nil)
}

// TestValidateRefusesWhatRunRefuses: ports, job names and topic names that
// would pass validate and then fail (or misbehave) in run are refused at
// validation, with file:line.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	long := strings.Repeat("t", 250)
	for _, tc := range []struct {
		yaml []byte
		want string
	}{
		{with("http: {addr: \"127.0.0.1:99999\"}"),
			`config.yaml:5: http.addr: port "99999" of "127.0.0.1:99999" is not a number from 0 to 65535`},
		{with("http: {addr: \"localhost:http\"}"),
			`config.yaml:5: http.addr: port "http" of "localhost:http" is not a number from 0 to 65535`},
		{with("http: {addr: \"127.0.0.1:-1\"}"),
			`config.yaml:5: http.addr: port "-1" of "127.0.0.1:-1" is not a number from 0 to 65535`},
		{doc(minimal[0], "kafka: {brokers: [\"localhost:99999\", \"localhost:kafka\", \"localhost:0\"]}", minimal[2], minimal[3]),
			`config.yaml:2: kafka.brokers[0]: port "99999" of "localhost:99999" is not a number from 1 to 65535` + "\n" +
				`config.yaml:2: kafka.brokers[1]: port "kafka" of "localhost:kafka" is not a number from 1 to 65535` + "\n" +
				`config.yaml:2: kafka.brokers[2]: port "0" of "localhost:0" is not a number from 1 to 65535`},
		{doc("name: "+strings.Repeat("n", 101), minimal[1], minimal[2], minimal[3]),
			`config.yaml:1: name: is longer than 100 characters`},
		{doc("name: .hidden", minimal[1], minimal[2], minimal[3]),
			`config.yaml:1: name: ".hidden" must start with a letter or a digit`},
		{doc("name: ..", minimal[1], minimal[2], minimal[3]),
			`config.yaml:1: name: ".." must start with a letter or a digit`},
		{doc(minimal[0], minimal[1], "source: {topics: [a/b, a b, "+long+", ., .., ordérs, ok]}", minimal[3]),
			`config.yaml:3: source.topics[0]: "a/b" is not a Kafka topic name: only letters, digits, '.', '_' and '-'` + "\n" +
				`config.yaml:3: source.topics[1]: "a b" is not a Kafka topic name: only letters, digits, '.', '_' and '-'` + "\n" +
				`config.yaml:3: source.topics[2]: a Kafka topic name has at most 249 characters, this one 250` + "\n" +
				`config.yaml:3: source.topics[3]: "." is not a Kafka topic name` + "\n" +
				`config.yaml:3: source.topics[4]: ".." is not a Kafka topic name` + "\n" +
				`config.yaml:3: source.topics[5]: "ordérs" is not a Kafka topic name: only letters, digits, '.', '_' and '-'`},
		{with("pipeline: {on_decode_error: {policy: dead_letter, topic: dead/letters}}"),
			`config.yaml:5: pipeline.on_decode_error.topic: "dead/letters" is not a Kafka topic name: only letters, digits, '.', '_' and '-'`},
		{with("pipeline: {on_decode_error: {policy: dead_letter, topic: " + long + "}}"),
			`config.yaml:5: pipeline.on_decode_error.topic: a Kafka topic name has at most 249 characters, this one 250`},
	} {
		t.Run(strings.SplitN(tc.want, ": ", 3)[1], func(t *testing.T) {
			j, err := config.Parse("config.yaml", tc.yaml, env(nil))
			if err == nil {
				t.Fatalf("Parse accepted %+v", j)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("wrong message\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
	mustParse(t, doc("name: a", minimal[1], "source: {topics: [Orders.v2_x-y, "+long[:249]+"]}", minimal[3],
		"http: {addr: \":0\"}", "pipeline: {on_decode_error: {policy: dead_letter, topic: ..dead}}"), nil)
}

// TestJobNamesMatchTheFileSink: the job name goes into the file sink's file
// names; config accepts exactly the names the file sink accepts, so no
// name passes validate and fails in run.
func TestJobNamesMatchTheFileSink(t *testing.T) {
	for _, name := range []string{
		"a", "orders", "Orders-2.v_1", "9lives", strings.Repeat("n", 100),
		strings.Repeat("n", 101), ".hidden", "_x", "-x", ".", "..", "a b", "a/b", "ordérs",
	} {
		_, cerr := config.Parse("config.yaml", doc("name: \""+name+"\"", minimal[1], minimal[2], "sink: {type: file, path: ./out}"), env(nil))
		_, ferr := file.New(file.Config{Path: "/out", Job: name}, vfs.NewMem(), zerolog.Nop())
		if (cerr == nil) != (ferr == nil) {
			t.Errorf("name %q: config says %v, the file sink says %v", name, cerr, ferr)
		}
	}
}
