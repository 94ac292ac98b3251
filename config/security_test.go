package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
)

// The kafka: section's TLS and SASL keys: each mistake is named under its
// key; working combinations pass, TLS files included.
func TestKafkaSecurityKeys(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	token := filepath.Join(dir, "token")
	for _, f := range []string{notPEM, token} {
		if err := os.WriteFile(f, []byte("not a certificate"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, kafka, want string // want "" : valid
	}{
		{"scram without tls", "sasl: {mechanism: SCRAM-SHA-512, username: u, password: p}", ""},
		{"plain with tls", "sasl: {mechanism: plain, username: u, password: p}, tls: {enabled: true}", ""},
		{"plain without tls", "sasl: {mechanism: PLAIN, username: u, password: p}", "kafka.sasl.mechanism: PLAIN without TLS"},
		{"plain allowed in clear", "sasl: {mechanism: PLAIN, username: u, password: p, allow_cleartext: true}", ""},
		{"oauthbearer from a file", "sasl: {mechanism: OAUTHBEARER, token_file: " + token + "}, tls: {server_name: kafka}", ""},
		{"oauthbearer from a command", "sasl: {mechanism: OAUTHBEARER, token_command: 'cat /tmp/t'}, tls: {enabled: true}", ""},
		{"oauthbearer without a token", "sasl: {mechanism: OAUTHBEARER}, tls: {enabled: true}", "kafka.sasl.token_file: OAUTHBEARER needs one of"},
		{"oauthbearer with both", "sasl: {mechanism: OAUTHBEARER, token_file: " + token + ", token_command: x}, tls: {enabled: true}", "kafka.sasl.token_file: OAUTHBEARER needs one of"},
		{"oauthbearer missing file", "sasl: {mechanism: OAUTHBEARER, token_file: /no/such/token}, tls: {enabled: true}", "kafka.sasl.token_file:"},
		{"msk iam", "sasl: {mechanism: AWS_MSK_IAM}, tls: {enabled: true}", ""},
		{"msk iam without tls", "sasl: {mechanism: AWS_MSK_IAM}", "kafka.sasl.mechanism: AWS_MSK_IAM needs TLS"},
		{"msk iam half keys", "sasl: {mechanism: AWS_MSK_IAM, access_key_id: a}, tls: {enabled: true}", "kafka.sasl.secret_access_key:"},
		{"unknown mechanism", "sasl: {mechanism: GSSAPI}", "kafka.sasl.mechanism:"},
		{"ca file missing", "tls: {ca_file: /no/such/ca.pem}", "kafka.tls.ca_file:"},
		{"ca file not pem", "tls: {ca_file: " + notPEM + "}", "kafka.tls.ca_file: " + notPEM + " holds no PEM certificate"},
		{"cert without key", "tls: {cert_file: " + notPEM + "}", "kafka.tls.key_file: is required with cert_file"},
		{"bad key pair", "tls: {cert_file: " + notPEM + ", key_file: " + notPEM + "}", "kafka.tls.cert_file:"},
		{"skip verify", "tls: {insecure_skip_verify: true}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := doc("name: orders", "kafka: {brokers: [localhost:9092], "+tc.kafka+"}", "source: {topics: [orders]}", "sink: {type: stdout}")
			j, err := config.Parse("config.yaml", y, env(nil))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			case tc.want == "" && !j.Kafka.TLS.On() && strings.Contains(tc.kafka, "tls"):
				t.Errorf("a tls key set, but TLS is off: %+v", j.Kafka.TLS)
			}
		})
	}
}
