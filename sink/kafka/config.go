package kafka

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/sink"
)

func init() {
	sink.Register(sink.Kind{
		Name:    "kafka",
		Summary: "exactly-once into a Kafka topic: one transaction per worker per checkpoint, committed when the checkpoint completes",
		Config:  func() any { return new(Config) },
		New: func(cfg any, env sink.Env) (sink.Sink, error) {
			return New(*cfg.(*Config), env)
		},
	})
}

// Config is the sink: section of a job file with type: kafka.
type Config struct {
	// Topic receives the records (unless TopicField names another), and
	// holds the progress markers (see the package documentation).
	Topic string `yaml:"topic" doc:"the topic records go to; must exist"`
	// TopicField, if set, is a dotted path into the record's JSON value
	// whose string names the record's topic; a record without it goes to
	// Topic.
	TopicField string `yaml:"topic_field,omitempty" doc:"take the topic from this JSON field (default: topic)"`
	// KeyField, if set, is a dotted path whose value is the output key (a
	// string's content, else its JSON text); default: the input record's key.
	KeyField string `yaml:"key_field,omitempty" doc:"take the key from this JSON field (default: the input key)"`
	// Partitioning: key (murmur2 of the key, as Java clients; records
	// without a key spread) or same_as_input (the input record's
	// partition number; the output topic needs at least as many).
	Partitioning string `yaml:"partitioning" default:"key" enum:"key,same_as_input" doc:"key (murmur2, as Java clients) | same_as_input"`
	// OriginHeaders adds connector.source.topic, .partition and .offset
	// headers to every record (the input's headers are always kept).
	OriginHeaders bool `yaml:"origin_headers,omitempty" doc:"add headers naming the input topic, partition and offset"`
	// Compression of produced batches.
	Compression string `yaml:"compression" default:"none" enum:"none,gzip,snappy,lz4,zstd" doc:"none | gzip | snappy | lz4 | zstd"`
	// TransactionTimeout is the producer's transaction.timeout.ms: longer
	// than checkpoint.timeout, at most the broker's
	// transaction.max.timeout.ms (checked at start). A transaction the
	// broker aborts on timeout loses nothing: see the package doc.
	TransactionTimeout time.Duration `yaml:"transaction_timeout" default:"10m" doc:"the transactions' timeout; above checkpoint.timeout"`
	// FitTimeout lowers TransactionTimeout to the brokers'
	// transaction.max.timeout.ms at start instead of refusing it: for a
	// sink whose timeout no key of the job sets (the dead-letter topic's
	// of a job whose sink is not Kafka). Not a config key.
	FitTimeout bool `yaml:"-"`
	// Brokers, if set, are another cluster's seed brokers, reached with
	// the SASL and TLS settings below (not kafka:'s); default: the
	// cluster of kafka:, with its settings.
	Brokers []string    `yaml:"brokers,omitempty" doc:"another cluster to write to (default: the kafka: cluster)"`
	SASL    config.SASL `yaml:"sasl,omitempty" doc:"SASL to the brokers of sink.brokers"`
	TLS     config.TLS  `yaml:"tls,omitempty" doc:"TLS to the brokers of sink.brokers"`
}

// cluster is the cluster the sink writes to.
func (c *Config) cluster(j *config.Job) config.Kafka {
	if len(c.Brokers) == 0 {
		return j.Kafka
	}
	return config.Kafka{Brokers: c.Brokers, ClientID: j.Kafka.ClientID, SASL: c.SASL, TLS: c.TLS}
}

// section is the config section of the sink's cluster: sink when it
// writes to a cluster of its own (sink.brokers), else kafka.
func (c *Config) section() string {
	if len(c.Brokers) == 0 {
		return "kafka"
	}
	return "sink"
}

// Normalize splits and trims brokers as kafka.brokers are.
func (c *Config) Normalize() {
	k := config.Kafka{Brokers: c.Brokers, SASL: c.SASL}
	k.Normalize()
	c.Brokers, c.SASL = k.Brokers, k.SASL
}

// Partitioning values.
const (
	PartitionByKey     = "key"
	PartitionSameInput = "same_as_input"
)

var codecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// Validate checks the section on its own.
func (c *Config) Validate(p *spec.Problems) {
	if c.Topic == "" {
		p.Add("topic", "is required")
	} else if why := config.TopicProblem(c.Topic); why != "" {
		p.Add("topic", "%s", why)
	}
	for key, path := range map[string]string{"topic_field": c.TopicField, "key_field": c.KeyField} {
		if path != "" && slices.Contains(splitPath(path), "") {
			p.Add(key, "%q has an empty path segment", path)
		}
	}
	spec.OneOf(p, "partitioning", "partitioning", c.Partitioning, PartitionByKey, PartitionSameInput)
	if _, ok := codecs[c.Compression]; !ok {
		spec.OneOf(p, "compression", "compression", c.Compression, "none", "gzip", "snappy", "lz4", "zstd")
	}
	if len(c.Brokers) > 0 {
		k := config.Kafka{Brokers: c.Brokers, SASL: c.SASL, TLS: c.TLS}
		k.Validate(p)
	} else if c.SASL != (config.SASL{}) || c.TLS != (config.TLS{}) {
		p.Add("brokers", "is required with sink.sasl or sink.tls (without it the sink writes to the kafka: cluster, with its settings)")
	}
	spec.Positive(p, "transaction_timeout", c.TransactionTimeout)
	spec.AtMost(p, "transaction_timeout", c.TransactionTimeout, time.Hour)
}

// ValidateJob checks the section against the job: the output topic is not
// read by the job, and a transaction outlives a checkpoint.
func (c *Config) ValidateJob(j *config.Job, p *spec.Problems) {
	if c.TransactionTimeout <= j.Checkpoint.Timeout && c.TransactionTimeout > 0 {
		p.Add("sink.transaction_timeout", "%v must be longer than checkpoint.timeout (%v)", c.TransactionTimeout, j.Checkpoint.Timeout)
	}
	if len(c.Brokers) == 0 && j.Source.Type == "kafka" {
		if topics, ok := j.Source.Config.(interface{ SourceTopics() []string }); ok && slices.Contains(topics.SourceTopics(), c.Topic) {
			p.Add("sink.topic", "%q is also a source topic", c.Topic)
		}
	}
}

func splitPath(path string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return out
}
