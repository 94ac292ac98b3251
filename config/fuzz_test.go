package config_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
)

// FuzzParse feeds the loader arbitrary files, starting from the hostile
// ones of the tests, and checks that it never panics, returns quickly,
// and returns either a Job or Errors whose every problem names this file
// and a line within it (0 for a key absent from the file).
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 60s ./config/
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../config.yaml")
	if err != nil {
		f.Fatal(err)
	}
	long := strings.Repeat("t", 250)
	for _, seed := range [][]byte{
		example,
		with(),
		selfAnchor,
		aliasBomb,
		listBomb,
		deepCondition(60),
		doc("a: &a [*a]"),
		doc("&a [*a, *a]"),
		with("pipeline: {parallelism: 9223372036854775807, channel_capacity: 9223372036854775807}"),
		with("pipeline: {parallelism: 10000, max_parallelism: 99999999999999999999}"),
		with("checkpoint: {interval: 876000h, timeout: -1s, retained: 1e9}"),
		with("restart: {max_failures: 0x7fffffffffffffff, initial_backoff: 876000h}"),
		with("state: {full_snapshot_after: 8EiB}"),
		doc("name: orders", "kafka: {brokers: [\"localhost:99999\", \"[::1]:kafka\"]}",
			"source: {topics: [a/b, \"a b\", ., .., "+long+"]}", "sink: {type: file, path: ./out, roll_size: 1e30}"),
		with("pipeline: {on_decode_error: {policy: dead_letter, topic: \"dead letters\"}}"),
		with("http: {addr: \"127.0.0.1:99999\"}", "state: {dir: \"${STATE:-${HOME}/x}\"}"),
		with("state: {dir: \"${A:-${B:-${C:-$${D}}}}\"}", "checkpoint: {dir: \"${UNTERMINATED\"}"),
		doc("name: "+strings.Repeat("n", 101), "kafka: {brokers: [\"${BROKERS}\"]}", "source: {topics: [orders]}", "sink: {type: stdout}"),
		with("pipeline:", "  transforms:", "    - {type: dedup, key: id, ttl: 876000h}",
			"    - {type: filter, condition: {any: [{field: x, op: in, value: [1, \"${A}\", ~]}]}}",
			"    - {type: project, keep: [a], rename: {a: b}}"),
		[]byte("\t\n"),
		[]byte("- [\n"),
	} {
		f.Add(seed)
	}
	vars := env(map[string]string{"A": "a", "EMPTY": "", "HOME": "/home/x", "BROKERS": "localhost:9092"})
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		j, err := config.Parse("fuzz.yaml", data, vars)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Parse took %v", d)
		}
		if err == nil {
			if j == nil {
				t.Fatal("Parse returned neither a Job nor an error")
			}
			if _, err := j.Dump(); err != nil {
				t.Errorf("Dump of a valid job: %v", err)
			}
			return
		}
		var errs config.Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("Parse error %T is not config.Errors: %v", err, err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Line < 0 || e.Line > lines || e.Msg == "" {
				t.Errorf("problem %+v: want file fuzz.yaml, a line from 0 to %d and a message", e, lines)
			}
		}
	})
}
