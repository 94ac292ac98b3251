package kafkaclient

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/connector-dev/connector/config"
)

// Each failure a misconfigured client meets is explained with the key to
// change, returned apart (for its line) and first in the hint; refusals are misconfigurations, guesses from an EOF are not. The
// real broker's answers are in the e2e tests (kafka_security_test.go).
func TestExplainNamesTheKey(t *testing.T) {
	scram := config.Kafka{SASL: config.SASL{Mechanism: config.SASLScramSHA256, Username: "u"}}
	tlsOn := config.Kafka{TLS: config.TLS{CAFile: "/ca.pem"}}
	for _, tc := range []struct {
		err  error
		k    config.Kafka
		key  string
		conf bool
	}{
		{fmt.Errorf("x: %w", kerr.SaslAuthenticationFailed), scram, "kafka.sasl.password", true},
		{kerr.UnsupportedSaslMechanism, scram, "kafka.sasl.mechanism", true},
		{kerr.IllegalSaslState, scram, "kafka.sasl:", true},
		{fmt.Errorf("unable to dial: %w", x509.UnknownAuthorityError{}), tlsOn, "kafka.tls.ca_file", true},
		{x509.HostnameError{Certificate: &x509.Certificate{}, Host: "kafka-0"}, tlsOn, "kafka.tls.server_name", true},
		{fmt.Errorf("remote error: %w", tls.AlertError(42)), tlsOn, "kafka.tls.cert_file", true},
		{fmt.Errorf("invalid large response size; is this a plaintext connection speaking to a tls endpoint?"), config.Kafka{}, "kafka.tls:", true},
	} {
		key, hint, conf := Explain(tc.err, tc.k)
		if key != strings.TrimSuffix(tc.key, ":") || !strings.HasPrefix(hint, key+": ") || conf != tc.conf {
			t.Errorf("Explain(%v) = %q, %q, %v; want the key and a hint starting %q, misconfigured %v", tc.err, key, hint, conf, tc.key, tc.conf)
		}
	}
	if key, hint, conf := Explain(fmt.Errorf("dial tcp: connection refused"), config.Kafka{}); key != "" || hint != "" || conf {
		t.Errorf("a refused connection (broker down) is not a misconfiguration: %q %q %v", key, hint, conf)
	}
}
