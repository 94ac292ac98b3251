// Package kafkaclient turns the job's kafka: section into franz-go client
// options, for every Kafka client of the job (the kafka source, the
// dead-letter producer, a kafka sink): seed brokers, client id, TLS, SASL.
// It owns no client; each user makes and closes its own.
package kafkaclient

import (
	"crypto/tls"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/connector-dev/connector/config"
)

// Opts are the options every Kafka client of the job shares.
func Opts(k config.Kafka) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ClientID(k.ClientID)}
	if k.TLS.Enabled {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	s := k.SASL
	switch s.Mechanism {
	case config.SASLPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password.Value()}.AsMechanism()))
	case config.SASLScramSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password.Value()}.AsSha256Mechanism()))
	case config.SASLScramSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password.Value()}.AsSha512Mechanism()))
	}
	return opts
}
