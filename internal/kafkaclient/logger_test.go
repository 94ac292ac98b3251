package kafkaclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A franz-go line carrying a key the job's logger already has (the kafka
// sink's "topic") must not write it twice: the line would not be a JSON
// object with unique keys, and log pipelines keep one value or reject it.
func TestFranzGoKeysNeverRepeatTheContextKeys(t *testing.T) {
	var buf bytes.Buffer
	base := zerolog.New(&buf).With().Timestamp().Str("sink", "kafka").Str("topic", "out").Logger()
	l := newLogger(base)
	l.Log(kgo.LogLevelWarn, "produce partition load error", "broker", "1", "topic", "out", "partition", 3, "err", errors.New("connection refused"), "time", "x")

	line := strings.TrimSpace(buf.String())
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", line)
	}
	seen := map[string]string{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		key := k.(string)
		if _, dup := seen[key]; dup {
			t.Fatalf("key %q twice: %s", key, line)
		}
		seen[key] = string(v)
	}
	want := map[string]string{
		"level": `"warn"`, "sink": `"kafka"`, "topic": `"out"`, "component": `"franz-go"`,
		"broker": `"1"`, "kafka_topic": `"out"`, "partition": `3`, "err": `"connection refused"`,
		"kafka_time": `"x"`, "message": `"produce partition load error"`,
	}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("%s = %s, want %s (line %s)", k, seen[k], v, line)
		}
	}
}
