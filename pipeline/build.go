package pipeline

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
	"github.com/connector-dev/connector/transform"
)

// This file maps the validated config onto each component's own Config.

func coordinatorSettings(c config.Checkpoint) checkpoint.Settings {
	mode := checkpoint.ExactlyOnce
	if c.Mode == config.AtLeastOnce {
		mode = checkpoint.AtLeastOnce
	}
	return checkpoint.Settings{
		Interval:          c.Interval,
		InitialDelayMax:   c.InitialDelay,
		Rand:              rand.Float64,
		MinPause:          c.MinPause,
		Timeout:           c.Timeout,
		MaxConcurrent:     c.MaxConcurrent,
		TolerableFailures: c.TolerableFailures,
		Retained:          c.Retained,
		Mode:              mode,
	}
}

func sourceConfig(j *config.Job) source.Config {
	return source.Config{
		Brokers:     j.Kafka.Brokers,
		Topics:      j.Source.Topics,
		Group:       j.Source.Group,
		StartOffset: string(j.Source.StartOffset),
		Readers:     j.Pipeline.Parallelism,
		ClientOpts: append(kafkaOpts(j),
			kgo.FetchMaxBytes(int32(min(j.Source.FetchMaxBytes, 1<<30))),
			kgo.FetchMaxPartitionBytes(int32(min(j.Source.FetchMaxPartitionBytes, 1<<30)))),
	}
}

// kafkaOpts are the client options every Kafka client of the job shares:
// client id, TLS, SASL.
func kafkaOpts(j *config.Job) []kgo.Opt {
	opts := []kgo.Opt{kgo.ClientID(j.Kafka.ClientID)}
	if j.Kafka.TLS.Enabled {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	s := j.Kafka.SASL
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

// ErrUnsupported classes a valid config that this build cannot run.
var ErrUnsupported = fmt.Errorf("not supported by this build")

func newSink(j *config.Job, fs vfs.FS, log zerolog.Logger) (sink.Sink, error) {
	switch j.Sink.Type {
	case config.SinkFile:
		return sink.NewFile(sink.FileConfig{
			Path:     j.Sink.Path,
			Format:   string(j.Sink.Format),
			RollSize: int64(j.Sink.RollSize),
			RollAge:  j.Sink.RollAge,
			Job:      j.Name,
		}, fs, log)
	case config.SinkStdout:
		return sink.NewStdout(os.Stdout), nil
	}
	return nil, fmt.Errorf("sink.type: %s: %w yet", j.Sink.Type, ErrUnsupported)
}

// transformSpecs maps the configured transforms; stateful reports whether
// any of them keeps keyed state.
func transformSpecs(ts []config.Transform) (specs []transform.Spec, stateful bool) {
	for _, t := range ts {
		switch {
		case t.Filter != nil:
			specs = append(specs, transform.Spec{Kind: transform.KindFilter, Config: filterConfig(t.Filter.Condition)})
		case t.Project != nil:
			specs = append(specs, transform.Spec{Kind: transform.KindProject, Config: transform.ProjectConfig{
				Keep: t.Project.Keep, Drop: t.Project.Drop, Rename: t.Project.Rename,
			}})
		case t.Dedup != nil:
			stateful = true
			specs = append(specs, transform.Spec{Kind: transform.KindDedup, Config: transform.DedupConfig{
				Key: t.Dedup.Key, TTL: t.Dedup.TTL,
			}})
		}
	}
	return specs, stateful
}

func filterConfig(c config.Condition) transform.FilterConfig {
	f := transform.FilterConfig{Field: c.Field, Op: transform.Op(c.Op), Value: c.Value}
	for _, sub := range c.All {
		f.All = append(f.All, filterConfig(sub))
	}
	for _, sub := range c.Any {
		f.Any = append(f.Any, filterConfig(sub))
	}
	return f
}
