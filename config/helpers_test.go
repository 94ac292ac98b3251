package config_test

import (
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
	_ "github.com/connector-dev/connector/internal/builtin" // the kinds a file may name
	"github.com/connector-dev/connector/sink/file"
	"github.com/connector-dev/connector/source/kafka"
	"github.com/connector-dev/connector/transform"
)

// env returns a LookupEnv over m.
func env(m map[string]string) config.LookupEnv {
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

func mustParse(t *testing.T, data []byte, vars map[string]string) *config.Job {
	t.Helper()
	j, err := config.Parse("config.yaml", data, env(vars))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return j
}

// src is the kafka source's section of j.
func src(j *config.Job) *kafka.Config { return j.Source.Config.(*kafka.Config) }

// fileSink is the file sink's section of j.
func fileSink(j *config.Job) *file.Config { return j.Sink.Config.(*file.Config) }

// filter is transform i of j, a filter.
func filter(j *config.Job, i int) *transform.FilterConfig {
	return j.Pipeline.Transforms[i].Config.(*transform.FilterConfig)
}
