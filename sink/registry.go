package sink

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/registry"
)

// Kind is one sink implementation, as it registers itself: its name (the
// `type` of the sink: section), its config struct and its constructor.
// See the package documentation, "Adding a sink".
type Kind struct {
	// Name is sink.type in the file.
	Name string
	// Summary is one line for help; say the guarantee (exactly-once or
	// at-least-once).
	Summary string
	// Config returns a pointer to a new, zero config struct: `yaml` keys,
	// `default` and `doc` tags (package internal/spec), and a Validate
	// method for what the tags cannot say. The config layer decodes the
	// sink: section into it, fills the defaults and validates it before
	// New sees it.
	Config func() any
	// New builds the sink from a config made by Config, decoded,
	// defaulted and valid. It may check what only the running system can
	// tell (a directory that cannot be created) and fail.
	New func(cfg any, env Env) (Sink, error)
}

// Env is what a sink gets from the runtime besides its own config.
type Env struct {
	// Job is the whole job, read-only: its name (which namespaces the
	// sink's output) and shared sections such as kafka:.
	Job *config.Job
	// FS is the filesystem for local files; tests inject faults through it.
	FS vfs.FS
	// Log is the job's logger.
	Log zerolog.Logger
	// Stdout is the process's standard output.
	Stdout io.Writer
	// KafkaHooks, if not nil, returns the franz-go hooks to install on a
	// new Kafka client of the sink (its metrics), named client.
	KafkaHooks func(client string) []kgo.Hook
	// Reached, if not nil, outlives the sink (the runtime's, for the
	// process's life): a sink sets it once it reached its system, so that
	// a sink of a later attempt retries a refusal (an expired token)
	// where the first one called it a config error.
	Reached *atomic.Bool
}

var kinds = registry.Of[Kind]{What: "sink kind"}

// Register adds a sink kind, and its config to the config layer. Call it
// from the kind's package init; registering a name twice panics.
func Register(k Kind) {
	if k.New == nil || k.Config == nil {
		panic(fmt.Sprintf("sink: kind %q is incomplete", k.Name))
	}
	kinds.Add(k.Name, k)
	config.RegisterKind(config.Kind{Section: config.SectionSink, Name: k.Name, Summary: k.Summary, New: k.Config})
}

// New builds the sink a job's sink: section configures.
func New(p config.Plugin, env Env) (Sink, error) {
	k, ok := kinds.Get(p.Type)
	if !ok {
		return nil, cfgkey.Wrap("sink.type", fmt.Errorf("%w: sink.type: %q is not a sink kind of this build", ErrInvalidConfig, p.Type))
	}
	if env.FS == nil {
		env.FS = vfs.Default
	}
	return k.New(p.Config, env)
}
