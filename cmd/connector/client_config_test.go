package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	kafkasink "github.com/connector-dev/connector/sink/kafka"
)

// TestInsecureSinkClusterIsWarnedAtStart: config/job.go documents
// tls.insecure_skip_verify as "logged at warn at every start" and README
// says the same; a kafka sink writing to its own cluster (sink.brokers)
// with sink.tls.insecure_skip_verify (or PLAIN with
// sink.sasl.allow_cleartext) weakens that connection just as much, but
// warnInsecure looks at the kafka: section only.
func TestInsecureSinkClusterIsWarnedAtStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		sink kafkasink.Config
		key  string
	}{
		{"insecure_skip_verify", kafkasink.Config{Topic: "out", Brokers: []string{"other:9093"},
			TLS: config.TLS{InsecureSkipVerify: true}}, "sink.tls.insecure_skip_verify"},
		{"allow_cleartext", kafkasink.Config{Topic: "out", Brokers: []string{"other:9092"},
			SASL: config.SASL{Mechanism: config.SASLPlain, Username: "u", Password: config.NewSecret("p"), AllowCleartext: true}}, "sink.sasl.allow_cleartext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Job{Name: "j", Kafka: config.Kafka{Brokers: []string{"127.0.0.1:9092"}}}
			snk := tc.sink
			cfg.Sink = config.Plugin{Type: "kafka", Config: &snk}
			var buf bytes.Buffer
			warnInsecure(zerolog.New(&buf), cfg)
			if !strings.Contains(buf.String(), tc.key) || !strings.Contains(buf.String(), `"level":"warn"`) {
				t.Errorf("%s on the sink's own cluster: warnInsecure logged %q; want a warning naming %s", tc.name, buf.String(), tc.key)
			}
		})
	}
}
