package config

import (
	"strings"
	"testing"
)

// env returns a LookupEnv over m.
func env(m map[string]string) LookupEnv {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// doc joins lines into a YAML file, so tests can count lines.
func doc(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

// minimal is the smallest valid job, as lines 1-4 of a file.
var minimal = []string{
	"name: orders",
	"kafka: {brokers: [localhost:9092]}",
	"source: {topics: [orders]}",
	"sink: {type: stdout}",
}

// with returns minimal followed by more lines (line 5 onwards).
func with(more ...string) []byte { return doc(append(append([]string(nil), minimal...), more...)...) }

func mustParse(t *testing.T, data []byte, vars map[string]string) *Job {
	t.Helper()
	j, err := Parse("config.yaml", data, env(vars))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return j
}
