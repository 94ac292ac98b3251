package kafkaclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
)

// ErrMisconfigured classes a connection failure that only a change of the
// kafka: section (or of the broker's listeners) cures: refused
// credentials, a certificate not trusted, a protocol the listener does not
// speak. Retrying does not help; `connector run` exits 2.
var ErrMisconfigured = errors.New("kafka connection misconfigured")

// Explain names the likely cause of err, a failure of a client of section
// k, and the key to look at: key is that key ("kafka.sasl.password", in
// the kafka: section) and hint, which starts with it, says what is wrong;
// both "" when it knows none. misconfigured is true for the causes the
// broker stated (a refusal, a TLS alert, a certificate that does not
// verify), which no retry cures; false for guesses from a closed
// connection, which a broker restarting can also cause.
func Explain(err error, k config.Kafka) (key, hint string, misconfigured bool) {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		alert     tls.AlertError
		firstEOF  *kgo.ErrFirstReadEOF
		s         = k.SASL
	)
	switch {
	case err == nil:
		return "", "", false
	case errors.Is(err, errNoAWSCredentials) || strings.Contains(err.Error(), errNoAWSCredentials.Error()): // franz-go may format it
		return "kafka.sasl", errNoAWSCredentials.Error(), true
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		switch s.Mechanism {
		case config.SASLOAuthBearer:
			return "kafka.sasl", "kafka.sasl: the broker refused the OAUTHBEARER token (expired, or not for this cluster)", true
		case config.SASLAWSMSKIAM:
			return "kafka.sasl", "kafka.sasl: the broker refused the AWS credentials (AWS_MSK_IAM)", true
		}
		return "kafka.sasl.password", fmt.Sprintf("kafka.sasl.password: the broker refused the credentials of user %q with %s: check kafka.sasl.username and password (a SCRAM user exists for each mechanism separately)", s.Username, s.Mechanism), true
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return "kafka.sasl.mechanism", fmt.Sprintf("kafka.sasl.mechanism: the listener does not take %s: use one its sasl.enabled.mechanisms lists", s.Mechanism), true
	case errors.Is(err, kerr.IllegalSaslState) && s.Mechanism != config.SASLNone:
		return "kafka.sasl", "kafka.sasl: the listener does not use SASL (a PLAINTEXT or SSL listener): remove kafka.sasl, or use the broker's SASL_SSL or SASL_PLAINTEXT port", true
	case errors.As(err, &unknownCA):
		trusted := "the system's root CAs"
		if k.TLS.CAFile != "" {
			trusted = k.TLS.CAFile
		}
		return "kafka.tls.ca_file", fmt.Sprintf("kafka.tls.ca_file: the broker's certificate is signed by a CA that %s does not hold: set kafka.tls.ca_file to the PEM certificate of the CA that signed it", trusted), true
	case errors.As(err, &hostname):
		return "kafka.tls.server_name", fmt.Sprintf("kafka.tls.server_name: the broker's certificate is not for the name dialled (%v): dial a name it holds, or set kafka.tls.server_name to one", hostname.Host), true
	case errors.As(err, &invalid):
		return "kafka.tls", fmt.Sprintf("kafka.tls: the broker's certificate is not valid: %v", invalid), true
	case errors.As(err, &alert) && certAlert(alert.Error()), certAlert(err.Error()):
		// The alert's type is lost when a client library formats the
		// error it wraps, hence the text too.
		if k.TLS.CertFile == "" {
			return "kafka.tls.cert_file", "kafka.tls.cert_file: the broker refused the connection for want of a client certificate (TLS alert): set kafka.tls.cert_file and key_file", true
		}
		return "kafka.tls.cert_file", fmt.Sprintf("kafka.tls.cert_file: the broker refused the client certificate in %s (TLS alert): it must be signed by a CA the broker trusts", k.TLS.CertFile), true
	case strings.Contains(err.Error(), "speaking to a tls endpoint"):
		return "kafka.tls", "kafka.tls: the listener speaks TLS (SSL or SASL_SSL): set kafka.tls.enabled: true (and kafka.tls.ca_file for a private CA)", true
	case errors.As(err, &firstEOF):
		switch {
		case k.TLS.On():
			return "kafka.tls", "kafka.tls: the broker closed the connection at the TLS handshake: the listener may not speak TLS (PLAINTEXT or SASL_PLAINTEXT); unset kafka.tls or use the broker's TLS port", false
		case s.Mechanism == config.SASLNone:
			return "kafka.sasl", "kafka.sasl: the broker closed the connection at the first request: the listener may require SASL (kafka.sasl) or TLS (kafka.tls)", false
		}
		return "kafka.tls", "kafka.tls: the broker closed the connection: the listener may require TLS (kafka.tls)", false
	}
	return "", "", false
}

// certAlert reports whether a TLS alert's text says the peer refused our
// certificate.
func certAlert(msg string) bool {
	for _, a := range []string{"tls: bad certificate", "tls: certificate required", "tls: unknown certificate authority", "tls: unknown certificate"} {
		if strings.Contains(msg, a) {
			return true
		}
	}
	return false
}
