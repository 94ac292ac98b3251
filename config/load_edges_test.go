package config_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink/file"
	"github.com/connector-dev/connector/transform"
)

// A second YAML document ("---") in a job file is refused, at the line
// of its "---": yaml.Unmarshal would read only the first one, and every
// key after the separator would be ignored without a word (here the
// checkpoint interval and mode the user asked for).
func TestSecondYAMLDocumentIsRefused(t *testing.T) {
	data := doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092]}",
		"source: {topics: [orders]}",
		"sink: {type: stdout}",
		"---",
		"checkpoint: {interval: 10m, mode: at_least_once}",
	)
	j, err := config.Parse("config.yaml", data, env(nil))
	if err == nil {
		t.Fatalf("a file with a second YAML document was accepted; its keys were dropped: checkpoint.interval=%v mode=%v (the file says 10m, at_least_once)",
			j.Checkpoint.Interval, j.Checkpoint.Mode)
	}
	var errs config.Errors
	if !errors.As(err, &errs) || errs[0].Line != 5 {
		t.Errorf("want one problem at line 5 (the ---), got %v", err)
	}
	mustParse(t, with("---"), nil) // an empty one drops nothing
}

// A required key that is absent is reported at the line of its closest
// parent in the file, or line 1: "file:line: key: problem" for every
// problem, never "config.yaml: sink.type: is required".
func TestMissingRequiredKeyNamesALine(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"no sink", doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}")},
		{"no name", doc("kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}", "sink: {type: stdout}")},
		{"no brokers", doc("name: orders", "source: {topics: [orders]}", "sink: {type: stdout}")},
	} {
		_, err := config.Parse("config.yaml", tc.data, env(nil))
		var errs config.Errors
		if !errors.As(err, &errs) {
			t.Fatalf("%s: want Errors, got %v", tc.name, err)
		}
		for _, e := range errs {
			if e.Line <= 0 {
				t.Errorf("%s: %q names no line", tc.name, e.Error())
			}
		}
	}
}

// An integer with a leading zero is refused, quoted or not: strconv's
// base 0 (and yaml.v3, for a filter's value) read "010" as octal 8, so
// "parallelism: 010" was 8 workers, while YAML 1.2 reads ten. An
// ambiguous number is refused, not silently read as another.
func TestLeadingZeroIntegerIsRefused(t *testing.T) {
	for _, tc := range []struct{ line, key string }{
		{"pipeline: {parallelism: 010}", "pipeline.parallelism"},
		{`pipeline: {parallelism: "010"}`, "pipeline.parallelism"},
		{"checkpoint: {retained: -010}", "checkpoint.retained"},
		{"pipeline: {transforms: [{type: filter, condition: {field: n, op: gte, value: 010}}]}", "pipeline.transforms[0].condition.value"},
	} {
		j, err := config.Parse("config.yaml", with(tc.line), env(nil))
		if err == nil {
			t.Errorf("%s: accepted (parallelism %d)", tc.line, j.Pipeline.Parallelism)
			continue
		}
		var errs config.Errors
		if !errors.As(err, &errs) || errs[0].Line != 5 || errs[0].Key != tc.key || !strings.Contains(errs[0].Msg, "leading 0") {
			t.Errorf("%s: want %s at line 5 refused for its leading 0, got %v", tc.line, tc.key, err)
		}
	}
	if j := mustParse(t, with("pipeline: {parallelism: 10}"), nil); j.Pipeline.Parallelism != 10 {
		t.Errorf("parallelism 10 read as %d", j.Pipeline.Parallelism)
	}
}

// An explicit 0 stays 0 in the config layer, and sink.roll_age: 0 means
// never by age (the file writer's old() treats 0 as never); file.New (as
// s3.New) fills the defaults of a Config built in code, where zero means
// unset, but not again those of a Config the config layer filled: else
// roll_age: 0 from a file became 1m, and parts rolled every minute.
func TestExplicitZeroRollAgeSurvivesTheSink(t *testing.T) {
	out := t.TempDir()
	j := mustParse(t, doc(
		"name: orders",
		"kafka: {brokers: [localhost:9092]}",
		"source: {topics: [orders]}",
		"sink: {type: file, path: '"+out+"', roll_age: 0s}",
	), nil)
	cfg := *fileSink(j)
	if cfg.RollAge != 0 {
		t.Fatalf("config layer: roll_age %v, want 0", cfg.RollAge)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return now }
	cfg.Job = j.Name
	s, err := file.New(cfg, vfs.Default, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := s.NewWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := w.Write(ctx, &record.Record{Topic: "orders", Value: []byte(`{"id":1}`)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	cs, err := w.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") {
			t.Errorf("roll_age: 0 (never by age), yet the part rolled by age after 2 minutes: %s is visible", n)
		}
	}
	_ = w.Close()
}

// Settings that the job would not use are refused, at their key's line:
// sink.tls.ca_file (or any tls key but enabled) without sink.brokers (the
// kafka sink then writes to the kafka: cluster with kafka:'s TLS), and
// AWS_MSK_IAM keys under kafka.sasl without a mechanism.
func TestIgnoredSecuritySettingsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"sink.tls.ca_file without sink.brokers", doc("name: orders", "kafka: {brokers: [localhost:9092]}", "source: {topics: [orders]}",
			"sink: {type: kafka, topic: out, tls: {ca_file: /etc/ssl/other-cluster-ca.pem}}"),
			"config.yaml:4: sink.brokers: is required with sink.sasl or sink.tls"},
		{"kafka.sasl keys without a mechanism", doc("name: orders", "kafka: {brokers: [localhost:9092], sasl: {access_key_id: AKIAQ, secret_access_key: s}}",
			"source: {topics: [orders]}", "sink: {type: stdout}"),
			"config.yaml:2: kafka.sasl.mechanism: is required when"},
	} {
		_, err := config.Parse("config.yaml", tc.data, env(nil))
		if err == nil {
			t.Errorf("%s: accepted, and the setting is not used", tc.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s...", tc.name, err, tc.want)
		}
	}
}

// checkpoint.mode: exactly_once, asked for in so many words, with the
// stdout sink (at-least-once: a restart prints again) is accepted without
// a word: the job promises what its sink cannot do.
func TestExactlyOnceWithStdoutSinkIsRefused(t *testing.T) {
	j, err := config.Parse("config.yaml", with("checkpoint: {mode: exactly_once}"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "checkpoint.mode: exactly_once cannot hold with sink.type stdout") {
		t.Errorf("checkpoint.mode: exactly_once with sink.type: stdout (at-least-once): %v, want it refused naming checkpoint.mode", err)
		if err == nil {
			t.Logf("accepted: mode %v, sink %s", j.Checkpoint.Mode, j.Sink.Type)
		}
	}
	for _, ok := range []string{"checkpoint: {mode: at_least_once}", "checkpoint: {interval: 2s}"} {
		j, err := config.Parse("config.yaml", with(ok), env(nil))
		if err != nil {
			t.Errorf("%s with sink.type: stdout: %v, want it accepted", ok, err)
			continue
		}
		// The mode left out is the one the sink keeps, so the job's dump
		// (validate --print) loads again.
		if j.Checkpoint.Mode != checkpoint.AtLeastOnce {
			t.Errorf("%s with sink.type: stdout: mode %v, want at_least_once", ok, j.Checkpoint.Mode)
		}
		out, err := j.Dump()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := config.Parse("dump.yaml", out, env(nil)); err != nil {
			t.Errorf("%s with sink.type: stdout: its dump does not load again: %v", ok, err)
		}
	}
}

// A filter's `value: null` (in any of YAML's spellings, or through a
// ${VAR}) is a null to compare with, kept by a dump; only a value left out
// is refused (bad_test.go).
func TestFilterValueGivenAsNullIsNotAbsent(t *testing.T) {
	vars := map[string]string{"NOTE_VALUE": "null"}
	for _, v := range []string{"null", "~", "", "${NOTE_VALUE}"} {
		j := mustParse(t, with("pipeline:", "  transforms:", "    - type: filter",
			"      condition:", "        field: note", "        op: eq", "        value: "+v), vars)
		cfg := j.Pipeline.Transforms[0].Config.(*transform.FilterConfig)
		if cfg.Condition.Value != spec.Null {
			t.Errorf("value: %q decoded as %#v, want spec.Null", v, cfg.Condition.Value)
		}
		f, err := transform.NewFilter(cfg.Condition)
		if err != nil {
			t.Fatalf("value: %q: %v", v, err)
		}
		for rec, want := range map[string]bool{`{"note":null}`: true, `{"note":"x"}`: false} {
			if got, err := f.Apply(&record.Record{Value: []byte(rec)}); err != nil || got != want {
				t.Errorf("value: %q on %s: kept %v (%v), want %v", v, rec, got, err, want)
			}
		}
		out, err := j.Dump()
		if err != nil {
			t.Fatal(err)
		}
		want := "value: null"
		if strings.HasPrefix(v, "$") {
			want = "value: " + v // as the file wrote it
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("value: %q: the dump lacks %q:\n%s", v, want, out)
		}
		if _, err := config.Parse("dump.yaml", out, env(vars)); err != nil {
			t.Errorf("value: %q: the dump does not load again: %v", v, err)
		}
	}
}
