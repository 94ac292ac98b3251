package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
)

// TestInterpolationHappensBeforeTypeConversion proves that numbers,
// durations, sizes, booleans and filter values can all come from the
// environment.
func TestInterpolationHappensBeforeTypeConversion(t *testing.T) {
	j := mustParse(t, doc(
		"name: ${JOB:-orders}",
		"kafka:",
		"  brokers: [\"${KAFKA_BROKERS:-localhost:9092}\"]",
		"  tls: {enabled: \"${TLS:-false}\"}",
		"source: {topics: [orders], fetch_max_bytes: \"${FETCH:-1MiB}\"}",
		"checkpoint: {interval: \"${INTERVAL}\", max_concurrent: \"${CONC:-2}\"}",
		"pipeline:",
		"  parallelism: ${PAR}",
		"  transforms:",
		"    - {type: filter, condition: {field: amount, op: gt, value: \"${MIN:-10}\"}}",
		"    - type: filter",
		"      condition:",
		"        field: amount",
		"        op: gt",
		"        value: ${MIN:-10}",
		"sink: {type: stdout}",
	), map[string]string{
		"KAFKA_BROKERS": "b1:9092, b2:9092", // one variable, several brokers
		"TLS":           "true",
		"INTERVAL":      "250ms",
		"PAR":           "4",
	})
	if j.Name != "orders" {
		t.Errorf("name = %q", j.Name)
	}
	if got := strings.Join(j.Kafka.Brokers, "|"); got != "b1:9092|b2:9092" {
		t.Errorf("brokers = %q, want split on the comma", got)
	}
	if !j.Kafka.TLS.Enabled || src(j).FetchMaxBytes != config.MiB || j.Checkpoint.Interval != 250*time.Millisecond ||
		j.Checkpoint.MaxConcurrent != 2 || j.Pipeline.Parallelism != 4 {
		t.Errorf("typed values from the environment were not converted: %+v", j)
	}
	// A quoted value stays a string; a plain one is typed after expansion.
	if v := filter(j, 0).Condition.Value; v != "10" {
		t.Errorf("quoted filter value = %#v, want the string \"10\"", v)
	}
	if v := filter(j, 1).Condition.Value; v != 10.0 {
		t.Errorf("plain filter value = %#v, want the number 10", v)
	}
}

func TestEmptyValueMeansDefault(t *testing.T) {
	j := mustParse(t, with(
		"checkpoint: {interval: \"${INTERVAL:-}\", retained: ~}",
		"pipeline:",
		"  transforms:",
		"    - type: filter",
		"      condition:",
		"        field: id",
		"        op: exists",
		"        value: ${NO_VALUE:-}",
		"http: {addr: \"\"}",
	), nil)
	if j.Checkpoint.Interval != time.Second || j.Checkpoint.Retained != 3 || j.HTTP.Addr != "127.0.0.1:8080" {
		t.Errorf("empty values did not take the defaults: %+v %+v", j.Checkpoint, j.HTTP)
	}
}
