package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
)

const saslPassword = "hunter2-sasl"

func secretJob(t *testing.T) *config.Job {
	return mustParse(t, doc(
		"name: orders",
		"kafka:",
		"  brokers: [localhost:9092]",
		"  sasl: {mechanism: PLAIN, username: connector, password: \"${KAFKA_PASSWORD}\", allow_cleartext: true}",
		"source: {topics: [orders]}",
		"sink: {type: stdout}",
	), map[string]string{"KAFKA_PASSWORD": saslPassword})
}

// TestSecretsNeverPrint: however a Job or a Secret is printed, dumped,
// marshalled or logged, the secrets do not appear; Value still returns them.
func TestSecretsNeverPrint(t *testing.T) {
	j := secretJob(t)
	if j.Kafka.SASL.Password.Value() != saslPassword {
		t.Fatalf("Value() lost the secrets")
	}
	dump, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	log := zerolog.New(&logged)
	log.Info().
		Object("password", j.Kafka.SASL.Password).
		Interface("job", j).
		Msg("loaded")

	outputs := map[string]string{
		"Dump":         string(dump),
		"json.Marshal": string(js),
		"%v":           fmt.Sprintf("%v", *j),
		"%+v":          fmt.Sprintf("%+v", *j),
		"%#v":          fmt.Sprintf("%#v", *j),
		"%s secret":    fmt.Sprintf("%s %q", j.Kafka.SASL.Password, j.Kafka.SASL.Password),
		"zerolog":      logged.String(),
	}
	for how, out := range outputs {
		if strings.Contains(out, saslPassword) {
			t.Errorf("%s shows a secret:\n%s", how, out)
		}
		if !strings.Contains(out, "***") {
			t.Errorf("%s does not show the redaction marker:\n%s", how, out)
		}
	}
}

// TestDumpParsesBackToTheSameJob: the effective config printed by
// `validate --print` is itself a valid config that means the same thing.
func TestDumpParsesBackToTheSameJob(t *testing.T) {
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [a:9092, b:9092]}",
		"source: {topics: [orders, refunds]}",
		"pipeline:",
		"  parallelism: 4",
		"  on_decode_error: {policy: dead_letter, topic: orders-dlq}",
		"  transforms:",
		"    - {type: filter, condition: {any: [{field: status, op: in, value: [paid, 3, true]}, {field: amount, op: gte, value: 10.5}]}}",
		"    - {type: project, drop: [internal], rename: {customer: customer_id}}",
		"    - {type: dedup, key: id}",
		"sink: {type: file, path: ./out, roll_size: 1000000}",
	), nil)
	dump, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	again, err := config.Parse("dump.yaml", dump, env(nil))
	if err != nil {
		t.Fatalf("the dump does not parse: %v\n%s", err, dump)
	}
	for i := range j.Pipeline.Transforms { // lines differ, meaning does not
		j.Pipeline.Transforms[i].Line = again.Pipeline.Transforms[i].Line
	}
	j.Source.Line, j.Sink.Line = again.Source.Line, again.Sink.Line
	if !reflect.DeepEqual(j.Source, again.Source) || !reflect.DeepEqual(j.Sink, again.Sink) ||
		!reflect.DeepEqual(j.Pipeline, again.Pipeline) || !reflect.DeepEqual(j.Checkpoint, again.Checkpoint) {
		t.Errorf("round trip changed the job\nbefore: %+v\nafter dump:\n%s", j, dump)
	}
	if again2 := dumpOf(t, again); again2 != string(dump) {
		t.Errorf("the dump of the dump differs:\n%s\n---\n%s", dump, again2)
	}
}

func dumpOf(t *testing.T, j *config.Job) string {
	t.Helper()
	b, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSinkClusterSecretsNeverPrint: a sink writing to another cluster has
// its own SASL password, redacted in the dump like kafka:'s.
func TestSinkClusterSecretsNeverPrint(t *testing.T) {
	const pw = "hunter3-sink"
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092]}",
		"source: {topics: [orders]}",
		"sink:",
		"  type: kafka",
		"  topic: out",
		"  brokers: [other:9092]",
		"  sasl: {mechanism: SCRAM-SHA-512, username: connector, password: \"${SINK_PASSWORD}\"}",
	), map[string]string{"SINK_PASSWORD": pw})
	dump, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for how, out := range map[string]string{"Dump": string(dump), "json.Marshal": string(js), "%+v": fmt.Sprintf("%+v", *j)} {
		if strings.Contains(out, pw) {
			t.Errorf("%s shows the sink's password:\n%s", how, out)
		}
	}
	if !strings.Contains(string(dump), "other:9092") {
		t.Errorf("Dump lost the sink's brokers:\n%s", dump)
	}
}

// TestPostgresDSNNeverPrints: the postgres sink's dsn holds a password; the
// dump shows it redacted.
func TestPostgresDSNNeverPrints(t *testing.T) {
	const pw = "hunter4-pg"
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092]}",
		"source: {topics: [orders]}",
		"sink:",
		"  type: postgres",
		"  dsn: \"postgres://connector:${PG_PASSWORD}@db:5432/shop\"",
		"  table: orders",
	), map[string]string{"PG_PASSWORD": pw})
	dump, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for how, out := range map[string]string{"Dump": string(dump), "json.Marshal": string(js)} {
		if strings.Contains(out, pw) || strings.Contains(out, "db:5432") {
			t.Errorf("%s shows the dsn:\n%s", how, out)
		}
	}
}

// TestDumpShowsInterpolatedValuesAsWritten: a secret can reach a field that
// is not a Secret through ${VAR} (a token command, an endpoint); Dump
// writes every interpolated value as the file wrote it, lists split at
// commas included, and literal values and defaults as they are.
func TestDumpShowsInterpolatedValuesAsWritten(t *testing.T) {
	const token = "eyJ-the-token"
	j := mustParse(t, doc(
		"name: orders",
		"kafka:",
		"  brokers: \"${BROKERS}\"",
		"  sasl: {mechanism: OAUTHBEARER, token_command: \"printf %s ${OAUTH_TOKEN}\", allow_cleartext: true}",
		"source: {topics: [orders, \"${EXTRA_TOPIC}\"]}",
		"sink: {type: file, path: \"${OUT:-./out}\"}",
	), map[string]string{"OAUTH_TOKEN": token, "BROKERS": "k1:9092,k2:9092", "EXTRA_TOPIC": "audit"})
	dump, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	out := string(dump)
	if strings.Contains(out, token) || strings.Contains(out, "k1:9092") || strings.Contains(out, "audit") || strings.Contains(out, "path: ./out") {
		t.Errorf("Dump shows interpolated values:\n%s", out)
	}
	for _, want := range []string{"token_command: printf %s ${OAUTH_TOKEN}", "- ${BROKERS}\n", "- orders\n    - ${EXTRA_TOPIC}\n", "path: ${OUT:-./out}", "client_id: orders"} {
		if !strings.Contains(out, want) {
			t.Errorf("Dump lacks %q:\n%s", want, out)
		}
	}
	if j.Kafka.SASL.TokenCommand != "printf %s "+token || len(j.Kafka.Brokers) != 2 {
		t.Errorf("the job itself must hold the values: %q, %q", j.Kafka.SASL.TokenCommand, j.Kafka.Brokers)
	}
}
