package kafka

import (
	"context"
	"slices"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/source"
)

func init() {
	source.Register(source.Kind{
		Name:    "kafka",
		Summary: "reads Kafka topics (read_committed), partitions split over the readers; offsets in the checkpoint",
		Default: true,
		Config:  func() any { return new(Config) },
		Open:    open,
	})
}

// Config is the source: section of a job file (type: kafka, the default).
// The cluster is the job's kafka: section.
type Config struct {
	Topics []string `yaml:"topics" doc:"the topics to read"`
	Group  string   `yaml:"group" default:"@/name" doc:"the consumer group that completed checkpoints' offsets are committed to"`
	// StartOffset is where to start a partition that has neither a
	// checkpointed nor a committed offset.
	StartOffset string `yaml:"start_offset" default:"earliest" enum:"earliest,latest" doc:"earliest (the log start) | latest (the last stable offset: the log end, before any open transaction); only with no checkpoint and no committed offset"`
	// FetchMaxBytes caps one fetch response.
	FetchMaxBytes config.ByteSize `yaml:"fetch_max_bytes" default:"50MiB" doc:"one fetch response at most"`
	// FetchMaxPartitionBytes caps one partition's share of a fetch
	// response (Kafka's max.partition.fetch.bytes, and its default). A
	// reader asks for less while its records are small (fetchsize.go):
	// each of its clients holds two fetches, each decoded in full.
	FetchMaxPartitionBytes config.ByteSize `yaml:"fetch_max_partition_bytes" default:"1MiB" doc:"one partition's share of a fetch at most (less for records under ~200 B); more = more memory"`
	// FetchesInFlight is how many clients a reader has, each with its own
	// fetch in flight over a share of the reader's partitions (never more
	// clients than partitions): a franz-go client has one fetch in flight
	// per broker, so one client leaves a busy reader waiting for the
	// broker (fetchers.go).
	FetchesInFlight int `yaml:"fetches_in_flight" default:"2" doc:"fetches a reader keeps in flight, 1 to 16: one client each over a share of its partitions (no more clients than partitions), each holding up to two fetches"`
	// OnPositionLost is what a restart does when a checkpointed position no
	// longer applies: the topic was deleted and recreated (its topic ID
	// changed), the offset lies outside the partition's log (records
	// deleted by retention before they were read, an impossible offset),
	// or the log was truncated below it (its leader ends the epoch the
	// position was read in before it: an unclean leader election, see
	// epoch.go). fail refuses to start, naming each partition; earliest
	// starts those partitions from their log start, a truncated log's from
	// where it diverged.
	OnPositionLost string `yaml:"on_position_lost" default:"fail" enum:"fail,earliest" doc:"fail | earliest: when a checkpointed position no longer applies (topic recreated, offset outside the log, log truncated below it); earliest goes on from the log start (a truncated log: from where it diverged)"`
}

// maxFetch is the most a fetch setting may ask for (the protocol's int32).
const maxFetch = config.GiB

// maxFetchesInFlight bounds fetches_in_flight: each is a client of its own.
const maxFetchesInFlight = 16

// Validate checks the section on its own.
func (c *Config) Validate(p *spec.Problems) {
	if len(c.Topics) == 0 {
		p.Add("topics", "at least one topic is required")
	}
	for i, t := range c.Topics {
		key := spec.Join("topics", "["+itoa(i)+"]")
		switch msg := config.TopicProblem(t); {
		case msg != "":
			p.Add(key, "%s", msg)
		case slices.Index(c.Topics, t) < i:
			p.Add(key, "%q is listed twice", t)
		}
	}
	// group defaults to the job's name, which is required: no check here.
	spec.OneOf(p, "start_offset", "start offset", c.StartOffset, StartEarliest, StartLatest)
	spec.OneOf(p, "on_position_lost", "choice", c.OnPositionLost, PositionLostFail, PositionLostEarliest)
	spec.Positive(p, "fetch_max_bytes", c.FetchMaxBytes)
	spec.AtMost(p, "fetch_max_bytes", c.FetchMaxBytes, maxFetch)
	spec.Positive(p, "fetch_max_partition_bytes", c.FetchMaxPartitionBytes)
	spec.AtMost(p, "fetch_max_partition_bytes", c.FetchMaxPartitionBytes, maxFetch)
	p.Between("fetches_in_flight", c.FetchesInFlight, 1, maxFetchesInFlight)
}

// ValidateJob checks the section against the rest of the job: the
// dead-letter topic must not be one that is read.
func (c *Config) ValidateJob(j *config.Job, p *spec.Problems) {
	if t := j.Pipeline.OnDecodeError.Topic; t != "" && slices.Contains(c.Topics, t) {
		p.Add("pipeline.on_decode_error.topic", "%q is also a source topic", t)
	}
}

// open is the kind's Open: the source: and kafka: sections, and the
// restored readers' positions, into a running Source.
func open(ctx context.Context, cfg any, env source.Env) (source.Source, error) {
	c := cfg.(*Config)
	var restored *position // nil: no checkpoint
	if env.Restored != nil {
		p, err := mergePositions(env.Restored)
		if err != nil {
			return nil, err
		}
		restored = &p
	}
	return Open(ctx, Options{
		Brokers:                env.Job.Kafka.Brokers,
		Topics:                 c.Topics,
		Group:                  env.Slot.Group(c.Group),
		Slot:                   env.Slot,
		BaseGroup:              c.Group,
		StartOffset:            c.StartOffset,
		OnPositionLost:         c.OnPositionLost,
		Readers:                env.Readers,
		DiscoverInterval:       env.DiscoverEvery,
		Hooks:                  env.KafkaHooks,
		Explain:                func(err error) (string, string, bool) { return kafkaclient.Explain(err, env.Job.Kafka) },
		FetchMaxBytes:          int32(c.FetchMaxBytes),
		FetchMaxPartitionBytes: int32(c.FetchMaxPartitionBytes),
		FetchesInFlight:        c.FetchesInFlight,
		ClientOpts:             kafkaclient.Opts(env.Job.Kafka, env.Log),
	}, restored, env.Log)
}

// SourceTopics lists the topics the source reads (for other sections'
// checks, such as a kafka sink's topic).
func (c *Config) SourceTopics() []string { return c.Topics }
