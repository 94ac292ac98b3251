package config

import (
	"time"
)

// Job is one connector job: everything a config file says, with defaults
// filled in. Load returns it validated; treat it as read-only afterwards (it is
// then safe to share between goroutines).
//
// The sections of the core are structs of this package (or, for
// checkpoint:, of the package that owns it); source:, sink: and each
// transform are a Plugin: the config struct of a kind registered by the
// package that implements it. Every default is a `default` tag beside its
// field (package internal/spec); every check is a Validate method of the
// struct that holds the key.
type Job struct {
	// Name identifies the job: the default consumer group, the prefix of
	// transactional ids, the checkpoint namespace and part of the sink's
	// output names. 1 to 100 letters, digits, '.', '_' and '-', starting
	// with a letter or a digit. Required.
	Name       string     `yaml:"name" doc:"the job's name: default consumer group, checkpoint namespace"`
	Kafka      Kafka      `yaml:"kafka" doc:"how to reach the Kafka cluster"`
	Source     Plugin     `yaml:"source" kind:"source" doc:"what to read (type: kafka by default)"`
	Checkpoint Checkpoint `yaml:"checkpoint" doc:"the checkpoint coordinator and where checkpoints are kept"`
	State      State      `yaml:"state" doc:"keyed state (Pebble)"`
	Pipeline   Pipeline   `yaml:"pipeline" doc:"the task graph between source and sink"`
	Sink       Plugin     `yaml:"sink" kind:"sink" doc:"where records go"`
	HTTP       HTTP       `yaml:"http" doc:"the status server"`
	Restart    Restart    `yaml:"restart" doc:"in-process restarts after a failure"`
	Log        Log        `yaml:"log" doc:"how the process logs (to stderr)"`
	Instances  Instances  `yaml:"instances" doc:"one process for the whole job, or several sharing it through a Kafka consumer group"`

	src *origin // where each key came from; nil for a Job built in code
}

// Kafka is how to reach the cluster; the kafka source, the dead-letter
// producer and a kafka sink share it.
type Kafka struct {
	// Brokers are seed "host:port" addresses; an entry may hold several,
	// comma-separated. Required.
	Brokers  []string `yaml:"brokers" doc:"seed brokers, host:port"`
	ClientID string   `yaml:"client_id" default:"@/name" doc:"the client id the brokers see"`
	SASL     SASL     `yaml:"sasl" doc:"SASL authentication; off without a mechanism"`
	TLS      TLS      `yaml:"tls" doc:"TLS to the brokers"`
}

// SASL authentication; off when Mechanism is empty. PLAIN and SCRAM take
// a username and password; OAUTHBEARER a token from a file or a command;
// AWS_MSK_IAM AWS credentials (the keys here, else AWS_* from the
// environment).
type SASL struct {
	Mechanism SASLMechanism `yaml:"mechanism,omitempty" doc:"PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM"`
	Username  string        `yaml:"username,omitempty" doc:"PLAIN and SCRAM: required"`
	Password  Secret        `yaml:"password,omitempty" doc:"PLAIN and SCRAM: required; never printed"`
	// TokenFile and TokenCommand give the OAUTHBEARER token, read (or run)
	// at every authentication, so a token refreshed by something else is
	// picked up on the next connection.
	TokenFile    string `yaml:"token_file,omitempty" doc:"OAUTHBEARER: a file holding the token (re-read at every authentication)"`
	TokenCommand string `yaml:"token_command,omitempty" doc:"OAUTHBEARER: a command (sh -c) printing the token, run at every authentication"`
	// AccessKeyID and SecretAccessKey are AWS_MSK_IAM's credentials; both
	// empty: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
	// AWS_SESSION_TOKEN from the environment.
	AccessKeyID     string `yaml:"access_key_id,omitempty" doc:"AWS_MSK_IAM: access key id; empty: AWS_ACCESS_KEY_ID from the environment"`
	SecretAccessKey Secret `yaml:"secret_access_key,omitempty" doc:"AWS_MSK_IAM: secret access key; empty: AWS_SECRET_ACCESS_KEY from the environment; never printed"`
	// AllowCleartext allows PLAIN and OAUTHBEARER without TLS, where the
	// password or token crosses the network readable by anyone on the path.
	AllowCleartext bool `yaml:"allow_cleartext,omitempty" doc:"allow PLAIN or OAUTHBEARER without kafka.tls (the secret crosses the network in clear)"`
}

// TLS to the brokers. Any key set turns TLS on; enabled: true alone
// trusts the system's root CAs.
type TLS struct {
	Enabled bool `yaml:"enabled" doc:"connect with TLS (implied by any other tls key)"`
	// CAFile: PEM certificates of the CAs that sign the brokers'
	// certificates, instead of the system's roots.
	CAFile string `yaml:"ca_file,omitempty" doc:"PEM file of the CA certificates to trust (default: the system's)"`
	// CertFile and KeyFile: a client certificate and its key (PEM), for
	// listeners that authenticate clients by certificate (mTLS).
	CertFile string `yaml:"cert_file,omitempty" doc:"PEM client certificate (mTLS), with key_file"`
	KeyFile  string `yaml:"key_file,omitempty" doc:"PEM private key of cert_file"`
	// ServerName is the name checked in the brokers' certificates instead
	// of the host of each address.
	ServerName string `yaml:"server_name,omitempty" doc:"name to verify in the brokers' certificates (default: each broker's host)"`
	// InsecureSkipVerify accepts any certificate: encryption without
	// authentication of the broker. Logged at warn at every start.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" doc:"accept any broker certificate (no authentication of the broker; logged loudly)"`
}

// On reports whether connections use TLS.
func (t *TLS) On() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// State is where operator state (Pebble) lives.
type State struct {
	Dir string `yaml:"dir" default:"./data/state" doc:"keyed state stores and their snapshots"`
	// FullSnapshotAfter: a checkpoint writes only what a worker's state
	// changed since the last barrier (a changelog); once a worker's
	// changelogs since its last full snapshot reach this size, a full
	// snapshot is taken in the background (also after 100 changelogs). A
	// restore applies at most about twice this much changelog.
	FullSnapshotAfter ByteSize `yaml:"full_snapshot_after" default:"64MiB" doc:"changelogs since the last full snapshot before a new one is taken in the background"`
}

// Pipeline is the task graph between source and sink.
type Pipeline struct {
	// Parallelism is the number of source readers and of workers (records
	// go from readers to workers as Route says). At most MaxParallelism.
	Parallelism int `yaml:"parallelism" default:"1" doc:"source readers and workers (records go from one to the other as route says)"`
	// MaxParallelism is the number of key groups keyed state is split
	// into: the highest parallelism the job can ever be rescaled to. It
	// cannot change once a checkpoint holds keyed state.
	MaxParallelism int `yaml:"max_parallelism" default:"128" doc:"key groups of keyed state: the most workers the job can rescale to"`
	// KeyBy is what a record's key group (its worker and its slice of
	// keyed state) is computed from: "" for the Kafka record key (the
	// partition for records without one), or the dotted path of a field
	// of the JSON value ("customer.id"), for records whose value has it.
	// A dedup is exact only among records of one key group, so a dedup on
	// a field that is not the Kafka key wants key_by set to that field. It
	// cannot change once a checkpoint holds keyed state.
	KeyBy string `yaml:"key_by,omitempty" doc:"field of the JSON value records are shuffled and keyed by (dedup's key); default: the Kafka record key"`
	// Route is which worker a record goes to. key: by its key group (the
	// shuffle above), so all records of a key reach one worker. partition:
	// to the worker of the reader that read it, no shuffle: a partition's
	// records stay together and in order on one worker (as Flink's forward
	// connection), which costs no hash or copy a record, and files written
	// from runs of one partition compress far better. It cannot serve keyed
	// state (a dedup) or key_by, and with fewer partitions than workers the
	// extra workers get nothing. auto: partition when the job keeps no keyed
	// state, has no key_by and its readers own as many partitions each at
	// start, else key.
	Route Route `yaml:"route" default:"auto" doc:"auto | key | partition: which worker a record goes to: by key group (all records of a key on one worker), or its reader's (a partition's records together and in order, no shuffle); auto: partition for a job without keyed state or key_by whose readers own as many partitions each"`
	// ChannelCapacity is the number of records each channel between tasks
	// buffers before the sender blocks (backpressure).
	ChannelCapacity int           `yaml:"channel_capacity" default:"1024" doc:"records buffered per channel between tasks"`
	OnDecodeError   OnDecodeError `yaml:"on_decode_error" doc:"what to do with a record that cannot be processed"`
	// Transforms run in order on every record.
	Transforms []Plugin `yaml:"transforms" kind:"transform" doc:"transforms, in order, each {type: ..., ...}"`
}

// OnDecodeError says what happens to a record whose value a transform cannot
// decode (for example, not JSON) or the sink cannot write.
type OnDecodeError struct {
	Policy DecodeErrorPolicy `yaml:"policy" default:"fail" doc:"fail | skip | dead_letter (exactly once with checkpoint.mode exactly_once, in transactions committed with the checkpoints; at-least-once otherwise; headers connector.source.topic, .partition and .offset name it)"`
	Topic  string            `yaml:"topic,omitempty" doc:"the dead-letter topic; required with dead_letter"`
}

// HTTP is the status server: /healthz /readyz /metrics /api/checkpoints.
type HTTP struct {
	Addr string `yaml:"addr" default:"127.0.0.1:8080" doc:"host:port of /healthz /readyz /metrics /api/checkpoints"`
	// StallIntervals: /healthz answers 503 when no checkpoint has
	// completed for this many checkpoint intervals (and at least
	// checkpoint.timeout plus one interval) while records wait in the
	// input: a wedged pipeline, which an orchestrator's liveness probe
	// then restarts. 0: /healthz is 200 while the process runs.
	StallIntervals int `yaml:"stall_intervals" default:"120" doc:"/healthz fails after this many checkpoint intervals (at least checkpoint.timeout + 1 interval) without a completed checkpoint while records wait; 0: never"`
}

// Restart is the in-process restart policy after a task fails: the job
// restarts from the last completed checkpoint after a backoff that doubles
// from InitialBackoff up to MaxBackoff, and exits non-zero after MaxFailures
// failures in a row (a completed checkpoint resets the count).
type Restart struct {
	MaxFailures    int           `yaml:"max_failures" default:"5" doc:"failures in a row before the process exits non-zero"`
	InitialBackoff time.Duration `yaml:"initial_backoff" default:"1s" doc:"wait before the first restart"`
	MaxBackoff     time.Duration `yaml:"max_backoff" default:"30s" doc:"longest wait between restarts"`
}
