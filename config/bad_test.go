package config_test

import (
	"errors"
	"testing"

	"github.com/connector-dev/connector/config"
)

// TestBadConfigsNameFileLineAndKey holds one row per kind of mistake, with the
// exact text it must produce: every problem, one per line, "file:line: key:
// what is wrong".
func TestBadConfigsNameFileLineAndKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml []byte
		env  map[string]string
		want string
	}{
		{
			name: "bad duration",
			yaml: with("checkpoint:", "  interval: 5 seconds"),
			want: `config.yaml:6: checkpoint.interval: "5 seconds" is not a duration`,
		},
		{
			name: "duration without unit",
			yaml: with("checkpoint: {timeout: 10}"),
			want: `config.yaml:5: checkpoint.timeout: "10" is not a duration`,
		},
		{
			name: "negative parallelism",
			yaml: with("pipeline:", "  parallelism: -2"),
			want: `config.yaml:6: pipeline.parallelism: must be at least 1, got -2`,
		},
		{
			name: "instances: a mode that does not exist",
			yaml: with("instances: {mode: cluster}"),
			want: `config.yaml:5: instances.mode: unknown instances mode "cluster" (want single or group)`,
		},
		{
			name: "instances: no slots, a session timeout too short",
			yaml: with("instances: {mode: group, slots: 0, session_timeout: 100ms}"),
			want: "config.yaml:5: instances.slots: must be between 1 and 1024, got 0\n" +
				"config.yaml:5: instances.session_timeout: 100ms: must be between 1s and 30m (the broker's group.min/max.session.timeout.ms, 6s and 30m by default, apply too)",
		},
		{
			name: "instances: group mode with object storage checkpoints",
			yaml: with("instances: {mode: group}", "checkpoint: {storage: s3://b/p}"),
			want: `config.yaml:6: checkpoint.storage: "s3://b/p": instances.mode: group fences a slot's owner by a lock in checkpoint.dir, which object storage has no equivalent of yet; share checkpoint.dir and state.dir between the processes instead (a shared filesystem)`,
		},
		{
			name: "unknown key at top",
			yaml: with("sinks: {}"),
			want: `config.yaml:5: sinks: unknown key (did you mean sink?)`,
		},
		{
			name: "unknown key nested",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source:", "  topics: [orders]", "  topicz: [more]", "sink: {type: stdout}"),
			want: `config.yaml:5: source.topicz: unknown key for source type kafka (did you mean topics?)`,
		},
		{
			name: "unknown key with nothing close",
			yaml: with("checkpoint: {frobnicate: true}"),
			want: `config.yaml:5: checkpoint.frobnicate: unknown key`,
		},
		{
			name: "wrong type: integer",
			yaml: with("checkpoint: {retained: three}"),
			want: `config.yaml:5: checkpoint.retained: "three" is not an integer`,
		},
		{
			name: "wrong type: mapping for a list",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source:", "  topics: {orders: 1}", "sink: {type: stdout}"),
			want: `config.yaml:4: source.topics: expected a list, got a mapping`,
		},
		{
			name: "wrong type: list for a string",
			yaml: with("http: {addr: [a, b]}"),
			want: `config.yaml:5: http.addr: expected a string, got a list`,
		},
		{
			name: "missing name",
			yaml: doc(minimal[1:]...),
			want: `config.yaml:1: name: is required`,
		},
		{
			name: "bad name",
			yaml: doc(append([]string{"name: orders to files"}, minimal[1:]...)...),
			want: `config.yaml:1: name: "orders to files" may only contain letters, digits, '.', '_' and '-'`,
		},
		{
			name: "missing brokers",
			yaml: doc("name: orders", "kafka:", "  client_id: me", "source: {topics: [orders]}", "sink: {type: stdout}"),
			want: `config.yaml:2: kafka.brokers: at least one broker is required`,
		},
		{
			name: "missing topics and no source at all",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "sink: {type: stdout}"),
			want: `config.yaml:1: source.topics: at least one topic is required`,
		},
		{
			name: "unknown top-level key close to another",
			yaml: with("source2: x"),
			want: `config.yaml:5: source2: unknown key (did you mean source?)`,
		},
		{
			name: "bad start_offset",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source:", "  topics: [orders]", "  start_offset: first", "sink: {type: stdout}"),
			want: `config.yaml:5: source.start_offset: unknown start offset "first" (want earliest or latest)`,
		},
		{
			name: "bad checkpoint mode",
			yaml: with("checkpoint:", "  mode: exactly-once"),
			want: `config.yaml:6: checkpoint.mode: unknown mode "exactly-once" (want exactly_once or at_least_once)`,
		},
		{
			name: "max_concurrent 0",
			yaml: with("checkpoint:", "  max_concurrent: 0"),
			want: `config.yaml:6: checkpoint.max_concurrent: must be between 1 and 100, got 0`,
		},
		{
			name: "bad sink type",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: bigquery"),
			want: `config.yaml:5: sink.type: unknown sink type "bigquery": this build runs file, kafka, postgres, s3 or stdout`,
		},
		{
			name: "missing sink",
			yaml: doc(minimal[:3]...),
			want: `config.yaml:1: sink.type: is required (one of file, kafka, postgres, s3 or stdout)`,
		},
		{
			name: "file sink without path",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: file", "  format: jsonl"),
			want: `config.yaml:4: sink.path: is required`,
		},
		{
			name: "key of another sink type",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: file", "  path: ./out", "  topic: out"),
			want: `config.yaml:7: sink.topic: unknown key for sink type file`,
		},
		{
			name: "a sink kind this build cannot run",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: jdbc", "  url: x"),
			want: `config.yaml:5: sink.type: unknown sink type "jdbc": this build runs file, kafka, postgres, s3 or stdout`,
		},
		{
			name: "kafka sink without topic",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: kafka"),
			want: `config.yaml:4: sink.topic: is required`,
		},
		{
			name: "kafka sink writing to its own source topic",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: kafka, topic: orders}"),
			want: `config.yaml:4: sink.topic: "orders" is also a source topic`,
		},
		{
			name: "kafka sink transactions shorter than a checkpoint",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "checkpoint: {timeout: 2m}", "sink:", "  type: kafka", "  topic: out", "  transaction_timeout: 1m"),
			want: `config.yaml:8: sink.transaction_timeout: 1m0s must be longer than checkpoint.timeout (2m0s)`,
		},
		{
			name: "kafka sink with sasl but no brokers of its own",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: kafka", "  topic: out", "  tls: {enabled: true}"),
			want: `config.yaml:4: sink.brokers: is required with sink.sasl or sink.tls (without it the sink writes to the kafka: cluster, with its settings)`,
		},
		{
			name: "kafka sink to another cluster with a bad broker and half a sasl",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink:", "  type: kafka", "  topic: orders", "  brokers: [other:90x]", "  sasl: {mechanism: plain, username: u}", "  compression: brotli"),
			want: "config.yaml:7: sink.brokers[0]: port \"90x\" of \"other:90x\" is not a number from 1 to 65535\n" +
				"config.yaml:8: sink.sasl.password: is required with mechanism PLAIN\n" +
				"config.yaml:8: sink.sasl.mechanism: PLAIN without TLS sends the password across the network in clear: set tls (enabled: true, or ca_file) beside sasl, or, on a network you trust, sasl.allow_cleartext: true\n" +
				"config.yaml:9: sink.compression: unknown compression \"brotli\" (want none, gzip, snappy, lz4 or zstd)",
		},
		{
			name: "a misspelt sink kind",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: fiel, path: ./out}"),
			want: `config.yaml:4: sink.type: unknown sink type "fiel": this build runs file, kafka, postgres, s3 or stdout (did you mean file?)`,
		},
		{
			name: "a source kind this build cannot run",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {type: pulsar, topics: [orders]}", "sink: {type: stdout}"),
			want: `config.yaml:3: source.type: unknown source type "pulsar": this build runs kafka`,
		},
		{
			name: "stdout sink with an unknown format",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: stdout, format: csv}"),
			want: `config.yaml:4: sink.format: unknown format "csv" (want jsonl or raw)`,
		},
		{
			name: "parallelism above max_parallelism",
			yaml: with("pipeline: {parallelism: 8, max_parallelism: 4}"),
			want: `config.yaml:5: pipeline.parallelism: 8 is more than pipeline.max_parallelism (4), the number of key groups`,
		},
		{
			name: "key_by with an empty path segment",
			yaml: with("pipeline: {key_by: customer..id}"),
			want: `config.yaml:5: pipeline.key_by: "customer..id" has an empty path segment`,
		},
		{
			name: "unknown route",
			yaml: with("pipeline: {route: forward}"),
			want: `config.yaml:5: pipeline.route: unknown route "forward" (want auto, key or partition)`,
		},
		{
			name: "route partition with key_by",
			yaml: with("pipeline: {key_by: id, route: partition}"),
			want: `config.yaml:5: pipeline.route: is partition, but key_by ("id") asks for records to be shuffled by that field; drop one of the two`,
		},
		{
			name: "route partition with a dedup",
			yaml: with("pipeline:", "  route: partition", "  transforms: [{type: dedup, key: id}]"),
			want: `config.yaml:6: pipeline.route: is partition, but a dedup keeps keyed state, which needs the records of a key on one worker: use key or auto`,
		},
		{
			name: "zero fetch partition bytes",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source:", "  topics: [orders]", "  fetch_max_partition_bytes: 0", "sink: {type: file, path: ./out}"),
			want: `config.yaml:5: source.fetch_max_partition_bytes: must be positive, got 0B`,
		},
		{
			name: "zero full snapshot size",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "state: {full_snapshot_after: 0}", "sink: {type: file, path: ./out}"),
			want: `config.yaml:4: state.full_snapshot_after: must be positive, got 0B`,
		},
		{
			name: "bad roll size",
			yaml: doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: file, path: ./out, roll_size: 64 parsecs}"),
			want: `config.yaml:4: sink.roll_size: "64 parsecs" is not a byte size`,
		},
		{
			name: "dead_letter without topic",
			yaml: with("pipeline:", "  on_decode_error:", "    policy: dead_letter"),
			want: `config.yaml:6: pipeline.on_decode_error.topic: is required with policy dead_letter`,
		},
		{
			name: "unknown transform type",
			yaml: with("pipeline:", "  transforms:", "    - type: filter", "      condition: {field: id, op: exists}", "    - type: map", "      fn: upper"),
			want: `config.yaml:9: pipeline.transforms[1].type: unknown transform type "map": this build runs dedup, filter or project`,
		},
		{
			name: "a broken transform does not shift the keys of the next ones",
			yaml: with("pipeline:", "  transforms:", "    - type: upper", "    - [not, a, mapping]", "    - type: dedup", "      ttl: 0s"),
			want: "config.yaml:7: pipeline.transforms[0].type: unknown transform type \"upper\": this build runs dedup, filter or project\n" +
				"config.yaml:8: pipeline.transforms[1]: expected a mapping with a type, got a list\n" +
				"config.yaml:9: pipeline.transforms[2].key: is required\n" +
				"config.yaml:10: pipeline.transforms[2].ttl: 0s: must be at least 1ms",
		},
		{
			name: "transform without type",
			yaml: with("pipeline:", "  transforms:", "    - key: id"),
			want: `config.yaml:7: pipeline.transforms[0].type: is required (one of dedup, filter or project)`,
		},
		{
			name: "dedup without key",
			yaml: with("pipeline:", "  transforms:", "    - type: dedup", "      ttl: 1m"),
			want: `config.yaml:7: pipeline.transforms[0].key: is required`,
		},
		{
			name: "key of another transform type",
			yaml: with("pipeline:", "  transforms:", "    - type: dedup", "      key: id", "      keep: [id]"),
			want: `config.yaml:9: pipeline.transforms[0].keep: unknown key for transform type dedup (did you mean key?)`,
		},
		{
			name: "filter with unknown op",
			yaml: with("pipeline:", "  transforms:", "    - type: filter", "      condition:", "        field: amount", "        op: greater"),
			want: `config.yaml:10: pipeline.transforms[0].condition.op: "greater" is not one of eq, ne, gt, gte, lt, lte, exists, not_exists, in`,
		},
		{
			name: "filter in without a list",
			yaml: with("pipeline:", "  transforms:", "    - {type: filter, condition: {all: [{field: id, op: exists}, {field: status, op: in, value: paid}]}}"),
			want: `config.yaml:7: pipeline.transforms[0].condition.all[1].value: op in takes a list (values), got string`,
		},
		{
			name: "filter eq without a value (null must be written)",
			yaml: with("pipeline:", "  transforms:", "    - type: filter", "      condition: {any: [{field: id, op: exists}, {field: status, op: ne}]}"),
			want: `config.yaml:8: pipeline.transforms[0].condition.any[1].value: is required with op ne (write value: null to compare with JSON null)`,
		},
		{
			name: "filter field with an empty path segment",
			yaml: with("pipeline:", "  transforms:", "    - type: filter", "      condition: {field: customer..id, op: exists}"),
			want: `config.yaml:8: pipeline.transforms[0].condition.field: "customer..id" has an empty path segment`,
		},
		{
			name: "project with keep and drop",
			yaml: with("pipeline:", "  transforms:", "    - type: project", "      keep: [id]", "      drop: [secret]"),
			want: `config.yaml:7: pipeline.transforms[0]: keep and drop are exclusive; use one`,
		},
		{
			name: "unset env var",
			yaml: doc("name: orders", "kafka:", "  brokers: [\"${KAFKA_BROKERS}\"]", "source: {topics: [orders]}", "sink: {type: stdout}"),
			want: `config.yaml:3: kafka.brokers[0]: environment variable KAFKA_BROKERS is not set (write ${KAFKA_BROKERS:-default} to give a default)`,
		},
		{
			name: "env var that is not a duration",
			yaml: with("checkpoint: {interval: \"${INTERVAL}\"}"),
			env:  map[string]string{"INTERVAL": "soon"},
			want: `config.yaml:5: checkpoint.interval: "soon" is not a duration`,
		},
		{
			name: "unterminated interpolation",
			yaml: with("state: {dir: \"${STATE_DIR\"}"),
			want: `config.yaml:5: state.dir: "${STATE_DIR" has no closing } for ${`,
		},
		{
			name: "bad yaml syntax: unclosed list, named at its start",
			yaml: doc("name: orders", "kafka:", "  brokers: [localhost:9092", "source: {topics: [orders]}"),
			want: `config.yaml:3: invalid YAML: did not find expected ',' or ']'`,
		},
		{
			name: "bad yaml syntax: tab indentation",
			yaml: doc("name: orders", "kafka:", "\tbrokers: [localhost:9092]"),
			want: `config.yaml:3: invalid YAML: found character that cannot start any token`,
		},
		{
			name: "bad yaml syntax: bad indentation",
			yaml: doc("name: orders", "kafka:", "  brokers: [localhost:9092]", "  - extra"),
			want: `config.yaml:3: invalid YAML: did not find expected key`,
		},
		{
			name: "duplicate key",
			yaml: with("name: again"),
			want: `config.yaml:5: name: duplicate key (first at line 1)`,
		},
		{
			name: "empty file",
			yaml: []byte("# nothing yet\n"),
			want: `config.yaml: the file is empty`,
		},
		{
			name: "a list at the top",
			yaml: doc("- name: orders"),
			want: `config.yaml:1: expected a mapping of keys (name, kafka, source, ...) at the top, got a list`,
		},
		{
			name: "restart backoff upside down",
			yaml: with("restart: {initial_backoff: 10s, max_backoff: 1s}"),
			want: `config.yaml:5: restart.max_backoff: 1s is less than restart.initial_backoff (10s)`,
		},
		{
			name: "sasl without password",
			yaml: doc("name: orders", "kafka:", "  brokers: [localhost:9092]", "  sasl: {mechanism: scram-sha-512, username: me}", "source: {topics: [orders]}", "sink: {type: stdout}"),
			want: `config.yaml:4: kafka.sasl.password: is required with mechanism SCRAM-SHA-512`,
		},
		{
			name: "several problems, all reported in line order",
			yaml: doc(
				"name: orders",
				"kafka: {brokers: [localhost:9092]}",
				"source: {topics: [orders, orders]}",
				"checkpoint:",
				"  interval: 0s",
				"  retained: 0",
				"pipeline: {parallelism: 0}",
				"sink: {type: file}",
				"http: {addr: \"8080\"}",
			),
			want: "config.yaml:3: source.topics[1]: \"orders\" is listed twice\n" +
				"config.yaml:5: checkpoint.interval: must be positive, got 0s\n" +
				"config.yaml:6: checkpoint.retained: must be between 1 and 1000, got 0\n" +
				"config.yaml:7: pipeline.parallelism: must be at least 1, got 0\n" +
				"config.yaml:8: sink.path: is required\n" +
				"config.yaml:9: http.addr: \"8080\" is not host:port",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := config.Parse("config.yaml", tc.yaml, env(tc.env))
			if err == nil {
				t.Fatalf("Parse accepted the config: %+v", j)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("wrong message\n got: %s\nwant: %s", got, tc.want)
			}
			var one *config.Error
			var all config.Errors
			if !errors.As(err, &one) || !errors.As(err, &all) {
				t.Fatalf("errors.As cannot find *Error and Errors in %T", err)
			}
			if one.File != "config.yaml" || one != all[0] {
				t.Errorf("first *Error = %+v, want the first of Errors, in config.yaml", one)
			}
		})
	}
}
