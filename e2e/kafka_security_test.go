package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secureListeners are the test broker's listeners of `scripts/kafka start
// --security` (scripts/test starts it so), and its certificates.
type secureListeners struct {
	saslSSL, ssl, saslPlaintext string
	tlsDir                      string
}

// The SASL user scripts/kafka --security creates (SCRAM and PLAIN).
const (
	secureUser     = "connector"
	securePassword = "connector-secret"
)

func secure(t *testing.T) secureListeners {
	t.Helper()
	l := secureListeners{os.Getenv("KAFKA_SASL_SSL_BROKERS"), os.Getenv("KAFKA_SSL_BROKERS"), os.Getenv("KAFKA_SASL_PLAINTEXT_BROKERS"), os.Getenv("KAFKA_TLS_DIR")}
	if l.saslSSL == "" || l.ssl == "" || l.saslPlaintext == "" || l.tlsDir == "" {
		t.Fatalf("this test needs the broker's secured listeners: KAFKA_SASL_SSL_BROKERS, KAFKA_SSL_BROKERS, KAFKA_SASL_PLAINTEXT_BROKERS and KAFKA_TLS_DIR are not all set; scripts/test starts the broker with them (scripts/kafka start --security)")
	}
	return l
}

func (l secureListeners) file(name string) string { return filepath.Join(l.tlsDir, name) }

// TestExactlyOnceOverSASLSSL is the random-kill test with the job reading
// over the broker's SASL_SSL listener (SCRAM-SHA-512, the broker's
// certificate checked against the test CA): 20 or more SIGKILLs, every id
// once. The producer and the reader of the output use the plaintext
// listener of the same broker.
func TestExactlyOnceOverSASLSSL(t *testing.T) {
	b := cluster(t)
	l := secure(t)
	j := newJob(t, b, jobSpec{Parallelism: 2, Partitions: 6, Config: map[string]map[string]any{
		"kafka": {
			"brokers": []string{l.saslSSL},
			"sasl":    map[string]any{"mechanism": "SCRAM-SHA-512", "username": secureUser, "password": securePassword},
			"tls":     map[string]any{"ca_file": l.file("ca.pem")},
		},
	}})
	killAndDrain(t, b, j, producerSpec{})
}

// TestSecuredListenersAcceptEachMechanism: a short run over each secured
// listener and mechanism reads what was produced (every id once) and stops
// cleanly: SASL_SSL with PLAIN, SCRAM-SHA-256 and OAUTHBEARER (an unsecured
// JWT in a file, which Kafka's default validator takes), SSL with a client
// certificate (mTLS), and SASL_PLAINTEXT with SCRAM.
func TestSecuredListenersAcceptEachMechanism(t *testing.T) {
	b := cluster(t)
	l := secure(t)
	token := filepath.Join(t.TempDir(), "token")
	now := time.Now().Unix()
	claims := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"sub":"connector","iat":%d,"exp":%d}`, now, now+3600))
	if err := os.WriteFile(token, []byte("eyJhbGciOiJub25lIn0."+claims+".\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := map[string]any{"ca_file": l.file("ca.pem")}
	for _, tc := range []struct {
		name  string
		kafka map[string]any
	}{
		{"sasl-ssl-plain", map[string]any{"brokers": []string{l.saslSSL}, "tls": ca,
			"sasl": map[string]any{"mechanism": "PLAIN", "username": secureUser, "password": securePassword}}},
		{"sasl-ssl-scram-sha-256", map[string]any{"brokers": []string{l.saslSSL}, "tls": ca,
			"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": secureUser, "password": securePassword}}},
		{"sasl-ssl-oauthbearer", map[string]any{"brokers": []string{l.saslSSL}, "tls": ca,
			"sasl": map[string]any{"mechanism": "OAUTHBEARER", "token_file": token}}},
		{"ssl-client-certificate", map[string]any{"brokers": []string{l.ssl},
			"tls": map[string]any{"ca_file": l.file("ca.pem"), "cert_file": l.file("client.pem"), "key_file": l.file("client.key")}}},
		{"sasl-plaintext-scram-sha-256", map[string]any{"brokers": []string{l.saslPlaintext},
			"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": secureUser, "password": securePassword}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 2_000
			j := newJob(t, b, jobSpec{Config: map[string]map[string]any{"kafka": tc.kafka}})
			prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: 20_000})
			prod.wait(t, time.Minute)
			p := j.start()
			j.waitForAll(p, n, time.Minute)
			j.terminate(p, time.Minute)
			j.requireExactlyOnce(n, 0, tc.name)
		})
	}
}

// TestMisconfiguredSecurityExitsNamingTheKey: a fault of the kafka: section
// that no retry cures ends the run at once with exit status 2, the key to
// change and the likely cause in the last log line (and the password
// nowhere): a wrong SCRAM password, a broker certificate signed by a CA the
// client does not trust, SSL without the client certificate the listener
// requires, SASL toward a listener without SASL, and plaintext toward a TLS
// listener. PLAIN without TLS is refused by validation, before any
// connection.
func TestMisconfiguredSecurityExitsNamingTheKey(t *testing.T) {
	b := cluster(t)
	l := secure(t)
	scram := func(password string) map[string]any {
		return map[string]any{"mechanism": "SCRAM-SHA-256", "username": secureUser, "password": password}
	}
	for _, tc := range []struct {
		name  string
		kafka map[string]any
		want  []string
	}{
		{"wrong-password", map[string]any{"brokers": []string{l.saslSSL}, "tls": map[string]any{"ca_file": l.file("ca.pem")}, "sasl": scram("not-the-password")},
			[]string{"kafka.sasl.password", "refused the credentials", secureUser}},
		{"untrusted-certificate", map[string]any{"brokers": []string{l.saslSSL}, "tls": map[string]any{"ca_file": l.file("untrusted-ca.pem")}, "sasl": scram(securePassword)},
			[]string{"kafka.tls.ca_file", "untrusted-ca.pem", "x509"}},
		{"no-client-certificate", map[string]any{"brokers": []string{l.ssl}, "tls": map[string]any{"ca_file": l.file("ca.pem")}},
			[]string{"kafka.tls.cert_file", "client certificate"}},
		{"sasl-toward-plaintext", map[string]any{"sasl": scram(securePassword)},
			[]string{"kafka.sasl", "does not use SASL"}},
		{"plaintext-toward-tls", map[string]any{"brokers": []string{l.ssl}},
			[]string{"kafka.tls", "speaks TLS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, b, jobSpec{Config: map[string]map[string]any{"kafka": tc.kafka}})
			p := j.start()
			msg, took := j.requireConfigFailure(p, time.Minute, tc.want...)
			if strings.Contains(msg, "not-the-password") || strings.Contains(msg, securePassword) {
				t.Errorf("the failure shows the password: %s", msg)
			}
			t.Logf("%s: exit 2 in %v: %s", p, took.Round(time.Millisecond), msg)
		})
	}
	t.Run("plain-without-tls", func(t *testing.T) {
		j := newJob(t, b, jobSpec{})
		j.spec.Config = map[string]map[string]any{"kafka": {"brokers": []string{l.saslPlaintext},
			"sasl": map[string]any{"mechanism": "PLAIN", "username": secureUser, "password": securePassword}}}
		out, err := j.command(time.Minute, "validate", "--config", j.writeConfig("plain.yaml", "127.0.0.1:0"))
		if err == nil || !strings.Contains(string(out), "kafka.sasl.mechanism") || !strings.Contains(string(out), "allow_cleartext") {
			t.Errorf("validate of PLAIN without TLS: %v\n%s", err, out)
		}
	})
}
