package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
)

// ccSinkOn makes a kafka sink writing to topic on its own cluster
// (sink.brokers, sink.sasl, sink.tls); the job's kafka: section names
// another cluster.
func ccSinkOn(t *testing.T, addrs []string, topic string, sasl config.SASL, tlsCfg config.TLS) *Sink {
	t.Helper()
	return ccSinkReached(t, addrs, topic, sasl, tlsCfg, nil)
}

// ccSinkReached is ccSinkOn with sink.Env.Reached.
func ccSinkReached(t *testing.T, addrs []string, topic string, sasl config.SASL, tlsCfg config.TLS, reached *atomic.Bool) *Sink {
	t.Helper()
	cfg := Config{Topic: topic}
	if err := spec.Fill(&cfg, "", nil); err != nil {
		t.Fatal(err)
	}
	cfg.Brokers, cfg.SASL, cfg.TLS = addrs, sasl, tlsCfg
	j := &config.Job{Name: "review", Kafka: config.Kafka{Brokers: []string{"127.0.0.1:1"}, ClientID: "review"}}
	j.Checkpoint.Config = checkpoint.DefaultConfig()
	s, err := New(cfg, sink.Env{Job: j, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Reached: reached})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// isConfigFault is what `connector run` exits 2 on.
func isConfigFault(err error) bool {
	return errors.Is(err, sink.ErrInvalidConfig) || errors.Is(err, kafkaclient.ErrMisconfigured)
}

// TestSinkClusterRefusedCredentialsIsAConfigFault: the sink's own
// cluster (sink.brokers) refuses sink.sasl's password. README: "A mistake
// the broker states (refused credentials, ...) exits 2 at once, naming the
// key". The sink's Recover must return an error classed as a config fault
// (sink.ErrInvalidConfig or kafkaclient.ErrMisconfigured) naming sink.sasl.
func TestSinkClusterRefusedCredentialsIsAConfigFault(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "connector", "the-right-one"), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	// Sanity: with the right password the sink recovers.
	ok := ccSinkOn(t, c.ListenAddrs(), "out",
		config.SASL{Mechanism: config.SASLScramSHA256, Username: "connector", Password: config.NewSecret("the-right-one")}, config.TLS{})
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ok.Recover(cctx, nil); err != nil {
		t.Fatalf("Recover with the right password: %v", err)
	}

	// kfake drops the connection on a wrong password; Apache Kafka answers
	// SaslAuthenticate with SASL_AUTHENTICATION_FAILED (what the e2e test
	// TestMisconfiguredSecurityExitsNamingTheKey meets for kafka.sasl):
	// answer as Kafka does.
	kafkatest.RefuseSASL(c)
	s := ccSinkOn(t, c.ListenAddrs(), "out",
		config.SASL{Mechanism: config.SASLScramSHA256, Username: "connector", Password: config.NewSecret("not-the-password")}, config.TLS{})
	rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer rcancel()
	start := time.Now()
	err = s.Recover(rctx, nil)
	t.Logf("Recover after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil || !isConfigFault(err) {
		t.Fatalf("refused credentials of the sink's cluster: Recover = %v; want an error classed sink.ErrInvalidConfig or kafkaclient.ErrMisconfigured (exit 2)", err)
	}
	if key, _ := cfgkey.Of(err); key != "sink.sasl.password" {
		t.Errorf("refused credentials of the sink's cluster: key %q attached, want sink.sasl.password (its line is printed)", key)
	}
}

// TestSinkClusterUntrustedCertificateIsAConfigFault: the sink's own
// cluster's certificate is signed by a CA that sink.tls.ca_file does not
// hold. No retry cures it; Recover must end with a config fault instead of
// retrying (as the source does for kafka.tls.ca_file).
func TestSinkClusterUntrustedCertificateIsAConfigFault(t *testing.T) {
	goodCA, goodServer := kafkatest.CA(t, "good-ca")
	otherCA, _ := kafkatest.CA(t, "other-ca")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{goodServer}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	// Sanity: sink.tls is applied (the trusted CA works).
	ok := ccSinkOn(t, c.ListenAddrs(), "out", config.SASL{}, config.TLS{CAFile: goodCA})
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ok.Recover(cctx, nil); err != nil {
		t.Fatalf("Recover with the trusted CA: %v", err)
	}

	s := ccSinkOn(t, c.ListenAddrs(), "out", config.SASL{}, config.TLS{CAFile: otherCA})
	rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer rcancel()
	start := time.Now()
	err = s.Recover(rctx, nil)
	t.Logf("Recover after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil || !isConfigFault(err) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("untrusted certificate of the sink's cluster: Recover = %v; want an error classed sink.ErrInvalidConfig or kafkaclient.ErrMisconfigured at once (exit 2), not retries until the deadline", err)
	}
}

// TestARefusalAfterTheSinkOnceReachedItsClusterIsRetried: once a sink of
// the job reached its cluster (an earlier attempt's: sink.Env.Reached
// outlives the sink), a refusal is an expired token or a rotated password,
// retried while the job waits, not a config error (exit 2): the sink is
// made anew at every attempt, so its own flag said "never reached" again.
func TestARefusalAfterTheSinkOnceReachedItsClusterIsRetried(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "connector", "the-right-one"), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var reached atomic.Bool
	sasl := config.SASL{Mechanism: config.SASLScramSHA256, Username: "connector", Password: config.NewSecret("the-right-one")}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ccSinkReached(t, c.ListenAddrs(), "out", sasl, config.TLS{}, &reached).Recover(cctx, nil); err != nil {
		t.Fatalf("Recover with the right password: %v", err)
	}
	if !reached.Load() {
		t.Fatal("a sink that recovered did not set sink.Env.Reached")
	}
	kafkatest.RefuseSASL(c) // the credentials now refused (a rotated password)
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	err = ccSinkReached(t, c.ListenAddrs(), "out", sasl, config.TLS{}, &reached).Recover(rctx, nil)
	if err == nil || isConfigFault(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a refusal after the job's sink once reached its cluster: Recover = %v; want it retried until the deadline, not a config fault", err)
	}
}
