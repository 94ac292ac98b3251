package pipeline

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestKafkaToKafkaRefusedCredentialsIsAConfigFault: a Kafka-to-Kafka
// job (sink on the kafka: cluster) whose kafka.sasl password the brokers
// refuse. README: "A mistake the broker states (refused credentials, ...)
// exits 2 at once, naming the key". The job must end with
// kafkaclient.ErrMisconfigured (what `connector run` exits 2 on) and the
// key, whichever of the sink's recovery and the source's open meets the
// refusal first (restore.go runs them concurrently; the first failure is
// the cause).
func TestKafkaToKafkaRefusedCredentialsIsAConfigFault(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "connector", "the-right-one"), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kafkatest.RefuseSASL(c) // as Apache Kafka answers a wrong password
	dir := t.TempDir()
	y := fmt.Sprintf(`
name: review-job
kafka: {brokers: [%q], sasl: {mechanism: SCRAM-SHA-256, username: connector, password: not-the-password}}
source: {topics: [in]}
checkpoint: {interval: 100ms, dir: %q, timeout: 10s}
state: {dir: %q}
sink: {type: kafka, topic: out}
http: {addr: "127.0.0.1:0"}
restart: {initial_backoff: 50ms, max_backoff: 200ms, max_failures: 2}
`, c.ListenAddrs()[0], filepath.Join(dir, "chk"), filepath.Join(dir, "state"))
	cfg, err := config.Parse("review.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j := New(cfg, Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Registry: prometheus.NewRegistry()})
	err = j.Run(ctx)
	t.Logf("Run: %v", err)
	if !errors.Is(err, kafkaclient.ErrMisconfigured) {
		t.Fatalf("refused kafka.sasl credentials, kafka sink: Run = %v; want kafkaclient.ErrMisconfigured (exit 2, naming kafka.sasl.password)", err)
	}
}

// TestKafkaToKafkaUntrustedCertificateIsAConfigFault: a
// Kafka-to-Kafka job (sink on the kafka: cluster) whose kafka.tls.ca_file
// does not hold the CA of the brokers' certificate. README: a certificate
// not trusted "exits 2 at once, naming the key"; the source's Open does so
// (kafkaclient.Explain), but it is never reached: the sink's check of its
// output (checkAhead: CommittedAfter) runs first and retries the TLS
// failure as "unreachable" until the process is stopped.
func TestKafkaToKafkaUntrustedCertificateIsAConfigFault(t *testing.T) {
	_, server := kafkatest.CA(t, "brokers-ca")
	otherCA, _ := kafkatest.CA(t, "other-ca")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{server}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	y := fmt.Sprintf(`
name: review-job
kafka: {brokers: [%q], tls: {ca_file: %q}}
source: {topics: [in]}
checkpoint: {interval: 100ms, dir: %q, timeout: 10s}
state: {dir: %q}
sink: {type: kafka, topic: out}
http: {addr: "127.0.0.1:0"}
restart: {initial_backoff: 50ms, max_backoff: 200ms, max_failures: 2}
`, c.ListenAddrs()[0], otherCA, filepath.Join(dir, "chk"), filepath.Join(dir, "state"))
	cfg, err := config.Parse("review.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j := New(cfg, Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel), Registry: prometheus.NewRegistry()})
	start := time.Now()
	err = j.Run(ctx)
	t.Logf("Run after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, kafkaclient.ErrMisconfigured) {
		t.Fatalf("untrusted broker certificate, kafka sink: Run = %v after %v; want kafkaclient.ErrMisconfigured at once (exit 2, naming kafka.tls.ca_file)", err, time.Since(start).Round(time.Second))
	}
}
