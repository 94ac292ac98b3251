package pipeline

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
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
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
	// As Apache Kafka answers a wrong password (kfake drops the connection).
	c.ControlKey(kmsg.SASLAuthenticate.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
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

// ccCert makes a CA (its PEM written to a file) and a certificate for
// 127.0.0.1 it signed.
func ccCert(t *testing.T, name string) (caFile string, server tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestKafkaToKafkaUntrustedCertificateIsAConfigFault: a
// Kafka-to-Kafka job (sink on the kafka: cluster) whose kafka.tls.ca_file
// does not hold the CA of the brokers' certificate. README: a certificate
// not trusted "exits 2 at once, naming the key"; the source's Open does so
// (kafkaclient.Explain), but it is never reached: the sink's check of its
// output (checkAhead: CommittedAfter) runs first and retries the TLS
// failure as "unreachable" until the process is stopped.
func TestKafkaToKafkaUntrustedCertificateIsAConfigFault(t *testing.T) {
	_, server := ccCert(t, "brokers-ca")
	otherCA, _ := ccCert(t, "other-ca")
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
