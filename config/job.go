package config

import "time"

// Job is one connector job: everything a config file says, with defaults
// filled in. Load returns it validated; treat it as read-only afterwards (it is
// then safe to share between goroutines).
type Job struct {
	// Name identifies the job: the default consumer group, the prefix of
	// transactional ids and prepared-transaction ids, and the checkpoint
	// namespace. Letters, digits, '.', '_' and '-' only. Required.
	Name       string     `yaml:"name"`
	Kafka      Kafka      `yaml:"kafka"`
	Source     Source     `yaml:"source"`
	Checkpoint Checkpoint `yaml:"checkpoint"`
	State      State      `yaml:"state"`
	Pipeline   Pipeline   `yaml:"pipeline"`
	Sink       Sink       `yaml:"sink"`
	HTTP       HTTP       `yaml:"http"`
	Restart    Restart    `yaml:"restart"`

	src *origin // where each key came from; nil for a Job built in code
}

// Kafka is how to reach the cluster; the source and the kafka sink share it.
type Kafka struct {
	// Brokers are seed "host:port" addresses. Required.
	Brokers  []string `yaml:"brokers"`
	ClientID string   `yaml:"client_id"` // default: the job name
	SASL     SASL     `yaml:"sasl"`
	TLS      TLS      `yaml:"tls"`
}

// SASL authentication; off when Mechanism is empty.
type SASL struct {
	Mechanism SASLMechanism `yaml:"mechanism,omitempty"` // "", PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
	Username  string        `yaml:"username,omitempty"`  // required with a mechanism
	Password  Secret        `yaml:"password,omitempty"`  // required with a mechanism
}

// TLS to the brokers, with the system's root CAs.
type TLS struct {
	Enabled bool `yaml:"enabled"`
}

// Source is what to read.
type Source struct {
	Topics []string `yaml:"topics"` // required, at least one
	Group  string   `yaml:"group"`  // consumer group; default: the job name
	// StartOffset is where to start a partition that has neither a
	// checkpointed nor a committed offset. Default earliest.
	StartOffset StartOffset `yaml:"start_offset"`
	// FetchMaxBytes caps one fetch response. Default 50MiB.
	FetchMaxBytes ByteSize `yaml:"fetch_max_bytes"`
	// FetchMaxPartitionBytes caps one partition's share of a fetch
	// response (Kafka's max.partition.fetch.bytes). Default 512KiB, not
	// Kafka's 1MiB: a reader holds two fetches (one being handed on, one
	// read ahead), each decoded in full; 512KiB kept the throughput of 1MiB
	// (256KiB did not) at about half the memory (bench/RESULTS.md).
	FetchMaxPartitionBytes ByteSize `yaml:"fetch_max_partition_bytes"`
}

// Checkpoint configures the coordinator (DESIGN.md, "The mechanism").
type Checkpoint struct {
	Interval time.Duration `yaml:"interval"` // base trigger interval; default 1s, > 0
	Timeout  time.Duration `yaml:"timeout"`  // a checkpoint pending longer fails; default 60s, > 0
	// MinPause is the least time between one checkpoint completing and the
	// next being triggered. Default 0s.
	MinPause      time.Duration `yaml:"min_pause"`
	MaxConcurrent int           `yaml:"max_concurrent"` // checkpoints in flight; default 1, >= 1
	Retained      int           `yaml:"retained"`       // completed checkpoints kept; default 3, >= 1
	Mode          Mode          `yaml:"mode"`           // default exactly_once
	Dir           string        `yaml:"dir"`            // default ./data/checkpoints
	// InitialDelay bounds the random delay before the first checkpoint (the
	// runtime draws it uniformly from [0, InitialDelay)), so that jobs
	// started together do not checkpoint in step. Default: Interval.
	InitialDelay time.Duration `yaml:"initial_delay"`
	// TolerableFailures is how many checkpoints in a row may fail (declined,
	// timed out) before the job is failed and restarted. A failed checkpoint
	// discards nothing; its committables go into the next one. Default 5.
	TolerableFailures int `yaml:"tolerable_failures"`
}

// State is where operator state (Pebble) lives.
type State struct {
	Dir string `yaml:"dir"` // default ./data/state
	// FullSnapshotAfter: a checkpoint writes only what a worker's state
	// changed since the last barrier (a changelog); once a worker's
	// changelogs since its last full snapshot reach this size, a full
	// snapshot is taken in the background (also after 100 changelogs). A
	// restore applies at most about twice this much changelog. Default
	// 64MiB.
	FullSnapshotAfter ByteSize `yaml:"full_snapshot_after"`
}

// Pipeline is the task graph between source and sink.
type Pipeline struct {
	// Parallelism is the number of workers after the shuffle by record key.
	// Default 1, >= 1.
	Parallelism int `yaml:"parallelism"`
	// ChannelCapacity is the number of records each channel between tasks
	// buffers before the sender blocks (backpressure). Default 1024, >= 1.
	ChannelCapacity int           `yaml:"channel_capacity"`
	OnDecodeError   OnDecodeError `yaml:"on_decode_error"`
	// Transforms run in order on every record.
	Transforms []Transform `yaml:"transforms"`
}

// OnDecodeError says what happens to a record whose value a transform cannot
// decode (for example, not JSON).
type OnDecodeError struct {
	Policy DecodeErrorPolicy `yaml:"policy"`          // default fail
	Topic  string            `yaml:"topic,omitempty"` // required with dead_letter, unused otherwise
}

// Sink is where records go. Which keys apply depends on Type; a key set for
// another type is an error.
type Sink struct {
	Type SinkType `yaml:"type"` // required

	// file
	Path     string        `yaml:"path,omitempty"`      // directory; required
	Format   Format        `yaml:"format,omitempty"`    // file and stdout; default jsonl
	RollSize ByteSize      `yaml:"roll_size,omitempty"` // roll a part file at this size; default 128MiB
	RollAge  time.Duration `yaml:"roll_age,omitempty"`  // roll a part file at this age; default 5m

	// kafka (transactional)
	Topic string `yaml:"topic,omitempty"` // required; not a source topic
	// TransactionTimeout is the producer's transaction.timeout.ms; must
	// exceed checkpoint.timeout (and fit the broker's
	// transaction.max.timeout.ms, checked at start). Default 10m.
	TransactionTimeout time.Duration `yaml:"transaction_timeout,omitempty"`

	// postgres
	DSN       Secret       `yaml:"dsn,omitempty"`        // required; redacted whole
	Table     string       `yaml:"table,omitempty"`      // required
	Mode      PostgresMode `yaml:"mode,omitempty"`       // default 2pc
	KeyColumn string       `yaml:"key_column,omitempty"` // required with upsert
}

// HTTP is the status server: /healthz /readyz /metrics /api/checkpoints.
type HTTP struct {
	Addr string `yaml:"addr"` // host:port; default 127.0.0.1:8080
}

// Restart is the in-process restart policy after a task fails: the job
// restarts from the last completed checkpoint after a backoff that doubles
// from InitialBackoff up to MaxBackoff, and exits non-zero after MaxFailures
// failures in a row (a completed checkpoint resets the count).
type Restart struct {
	MaxFailures    int           `yaml:"max_failures"`    // default 5, >= 1
	InitialBackoff time.Duration `yaml:"initial_backoff"` // default 1s, > 0
	MaxBackoff     time.Duration `yaml:"max_backoff"`     // default 30s, >= InitialBackoff
}
