package config

// SASLMechanism names a SASL mechanism; Load upper-cases it.
type SASLMechanism string

// SASL mechanisms.
const (
	SASLNone        SASLMechanism = ""
	SASLPlain       SASLMechanism = "PLAIN"
	SASLScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	SASLScramSHA512 SASLMechanism = "SCRAM-SHA-512"
)

// StartOffset is where a partition with no checkpointed and no committed
// offset starts.
type StartOffset string

// Start offsets.
const (
	Earliest StartOffset = "earliest"
	Latest   StartOffset = "latest"
)

// Mode is the checkpointing guarantee.
type Mode string

// Checkpoint modes. In at-least-once mode barriers are not aligned.
const (
	ExactlyOnce Mode = "exactly_once"
	AtLeastOnce Mode = "at_least_once"
)

// DecodeErrorPolicy says what to do with a record that cannot be decoded.
type DecodeErrorPolicy string

// Decode error policies.
const (
	DecodeFail       DecodeErrorPolicy = "fail"        // fail the job
	DecodeSkip       DecodeErrorPolicy = "skip"        // drop the record and count it
	DecodeDeadLetter DecodeErrorPolicy = "dead_letter" // produce it to OnDecodeError.Topic
)

// SinkType selects the sink implementation.
type SinkType string

// Sink types.
const (
	SinkFile     SinkType = "file"
	SinkKafka    SinkType = "kafka"
	SinkPostgres SinkType = "postgres"
	SinkStdout   SinkType = "stdout"
)

// Format is how the file and stdout sinks write a record.
type Format string

// Formats.
const (
	FormatJSONL Format = "jsonl" // the record value and a newline
	FormatRaw   Format = "raw"   // the record value's bytes, nothing added
)

// PostgresMode is how the postgres sink makes its writes exactly-once.
type PostgresMode string

// Postgres modes.
const (
	Postgres2PC    PostgresMode = "2pc"    // PREPARE TRANSACTION / COMMIT PREPARED
	PostgresUpsert PostgresMode = "upsert" // INSERT ... ON CONFLICT (key_column) DO UPDATE
)
