package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const (
	saslPassword = "hunter2-sasl"
	pgPassword   = "hunter2-pg"
)

func secretJob(t *testing.T) *Job {
	return mustParse(t, doc(
		"name: orders",
		"kafka:",
		"  brokers: [localhost:9092]",
		"  sasl: {mechanism: PLAIN, username: connector, password: \"${KAFKA_PASSWORD}\"}",
		"source: {topics: [orders]}",
		"sink:",
		"  type: postgres",
		"  dsn: postgres://connector:"+pgPassword+"@db:5432/shop",
		"  table: orders",
	), map[string]string{"KAFKA_PASSWORD": saslPassword})
}

// TestSecretsNeverPrint: however a Job or a Secret is printed, dumped,
// marshalled or logged, the secrets do not appear; Value still returns them.
func TestSecretsNeverPrint(t *testing.T) {
	j := secretJob(t)
	if j.Kafka.SASL.Password.Value() != saslPassword || !strings.Contains(j.Sink.DSN.Value(), pgPassword) {
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
		Stringer("dsn", j.Sink.DSN).
		Interface("job", j).
		Msg("loaded")

	outputs := map[string]string{
		"Dump":         string(dump),
		"json.Marshal": string(js),
		"%v":           fmt.Sprintf("%v", *j),
		"%+v":          fmt.Sprintf("%+v", *j),
		"%#v":          fmt.Sprintf("%#v", *j),
		"%s secret":    fmt.Sprintf("%s %q", j.Sink.DSN, j.Kafka.SASL.Password),
		"zerolog":      logged.String(),
	}
	for how, out := range outputs {
		if strings.Contains(out, saslPassword) || strings.Contains(out, pgPassword) {
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
	again, err := Parse("dump.yaml", dump, env(nil))
	if err != nil {
		t.Fatalf("the dump does not parse: %v\n%s", err, dump)
	}
	for i := range j.Pipeline.Transforms { // lines differ, meaning does not
		j.Pipeline.Transforms[i].Line = again.Pipeline.Transforms[i].Line
	}
	j.src = again.src
	if !reflect.DeepEqual(j, again) {
		t.Errorf("round trip changed the job\nbefore: %s\nafter dump:\n%s", mustDump(t, j), dump)
	}
}

func mustDump(t *testing.T, j *Job) []byte {
	t.Helper()
	b, err := j.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
