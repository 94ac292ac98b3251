package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
)

// ccCA is a CA made for one test, and a server certificate for
// 127.0.0.1 it signed.
type ccCA struct {
	pemFile string
	server  tls.Certificate
}

func newReviewCA(t *testing.T, name string) ccCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ccCA{pemFile: f, server: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}
}

// ccSinkOn makes a kafka sink writing to topic on its own cluster
// (sink.brokers, sink.sasl, sink.tls); the job's kafka: section names
// another cluster.
func ccSinkOn(t *testing.T, addrs []string, topic string, sasl config.SASL, tlsCfg config.TLS) *Sink {
	t.Helper()
	cfg := Config{Topic: topic}
	if err := spec.Fill(&cfg, "", nil); err != nil {
		t.Fatal(err)
	}
	cfg.Brokers, cfg.SASL, cfg.TLS = addrs, sasl, tlsCfg
	j := &config.Job{Name: "review", Kafka: config.Kafka{Brokers: []string{"127.0.0.1:1"}, ClientID: "review"}}
	j.Checkpoint.Config = checkpoint.DefaultConfig()
	s, err := New(cfg, sink.Env{Job: j, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
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
	c.ControlKey(kmsg.SASLAuthenticate.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
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
}

// TestSinkClusterUntrustedCertificateIsAConfigFault: the sink's own
// cluster's certificate is signed by a CA that sink.tls.ca_file does not
// hold. No retry cures it; Recover must end with a config fault instead of
// retrying (as the source does for kafka.tls.ca_file).
func TestSinkClusterUntrustedCertificateIsAConfigFault(t *testing.T) {
	good, other := newReviewCA(t, "good-ca"), newReviewCA(t, "other-ca")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{good.server}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	// Sanity: sink.tls is applied (the trusted CA works).
	ok := ccSinkOn(t, c.ListenAddrs(), "out", config.SASL{}, config.TLS{CAFile: good.pemFile})
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ok.Recover(cctx, nil); err != nil {
		t.Fatalf("Recover with the trusted CA: %v", err)
	}

	s := ccSinkOn(t, c.ListenAddrs(), "out", config.SASL{}, config.TLS{CAFile: other.pemFile})
	rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer rcancel()
	start := time.Now()
	err = s.Recover(rctx, nil)
	t.Logf("Recover after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil || !isConfigFault(err) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("untrusted certificate of the sink's cluster: Recover = %v; want an error classed sink.ErrInvalidConfig or kafkaclient.ErrMisconfigured at once (exit 2), not retries until the deadline", err)
	}
}
