// Package kafkaclient turns the job's kafka: section into franz-go client
// options, for every Kafka client of the job (the kafka source, the
// dead-letter producer, a kafka sink): seed brokers, client id, TLS, SASL,
// and franz-go's own log (logger.go). It also names the likely cause of a
// connection failure (explain.go). It owns no client; each user makes and
// closes its own.
package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/connector-dev/connector/config"
)

// Opts returns the client options of section k; franz-go logs through log
// (at warn and above). A TLS file that no longer loads (config validation
// loaded it) makes every dial fail with the reason.
func Opts(k config.Kafka, log zerolog.Logger) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ClientID(k.ClientID), kgo.WithLogger(newLogger(log))}
	if k.TLS.On() {
		c, err := k.TLS.Config()
		if err != nil {
			opts = append(opts, kgo.Dialer(func(context.Context, string, string) (net.Conn, error) { return nil, err }))
		} else {
			opts = append(opts, kgo.DialTLSConfig(c))
		}
	}
	if m := mechanism(k.SASL); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

func mechanism(s config.SASL) sasl.Mechanism {
	switch s.Mechanism {
	case config.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password.Value()}.AsMechanism()
	case config.SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password.Value()}.AsSha256Mechanism()
	case config.SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password.Value()}.AsSha512Mechanism()
	case config.SASLOAuthBearer:
		return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
			tok, err := Token(ctx, s)
			return oauth.Auth{Token: tok}, err
		})
	case config.SASLAWSMSKIAM:
		return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) {
			a := aws.Auth{AccessKey: s.AccessKeyID, SecretKey: s.SecretAccessKey.Value(), UserAgent: "connector"}
			if a.AccessKey == "" {
				a.AccessKey, a.SecretKey, a.SessionToken = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")
			}
			if a.AccessKey == "" || a.SecretKey == "" {
				return a, errNoAWSCredentials
			}
			return a, nil
		})
	}
	return nil
}

// errNoAWSCredentials: AWS_MSK_IAM without keys, in the config or the
// process's environment, which does not change: Explain calls it a
// misconfiguration.
var errNoAWSCredentials = errors.New("kafka.sasl: AWS_MSK_IAM has no credentials: set kafka.sasl.access_key_id and secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")

// tokenTimeout bounds a token_command.
const tokenTimeout = 30 * time.Second

// Token returns the OAUTHBEARER token of s: token_file's content, or what
// token_command prints, trimmed of surrounding white space.
func Token(ctx context.Context, s config.SASL) (string, error) {
	var (
		b   []byte
		err error
	)
	if s.TokenFile != "" {
		b, err = os.ReadFile(s.TokenFile)
		if err != nil {
			return "", fmt.Errorf("kafka.sasl.token_file: %w", err)
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
		defer cancel()
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "sh", "-c", s.TokenCommand)
		cmd.Stderr = &stderr
		if b, err = cmd.Output(); err != nil {
			return "", fmt.Errorf("kafka.sasl.token_command: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("kafka.sasl: the OAUTHBEARER token is empty")
	}
	return tok, nil
}
