package source

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/registry"
)

// Kind is one source implementation, as it registers itself: its name (the
// `type` of the source: section), its config struct and how to open it.
type Kind struct {
	// Name is source.type in the file.
	Name string
	// Summary is one line for help.
	Summary string
	// Default makes this kind the source when the file names no type.
	Default bool
	// Config returns a pointer to a new, zero config struct (`yaml`,
	// `default` and `doc` tags and a Validate method; package
	// internal/spec). The config layer decodes, defaults and validates it
	// before Open sees it.
	Config func() any
	// Open connects and resolves where each reader starts (see Source).
	Open func(ctx context.Context, cfg any, env Env) (Source, error)
}

// Env is what a source gets from the runtime besides its own config.
type Env struct {
	// Job is the whole job, read-only (its name, kafka:).
	Job *config.Job
	// Readers is the number of parallel readers to make (the job's
	// parallelism); reader i is task "source-i".
	Readers int
	// Restored holds the readers' positions of the checkpoint the job
	// restores from, in any order and from any number of readers (a job
	// restarted with another parallelism); nil when there is none.
	Restored []Position
	// DiscoverEvery is how often Run looks for new input (partitions added
	// to a topic); 0 is the kind's default.
	DiscoverEvery time.Duration
	// Slot, if not nil, makes the job one slot of a job shared by several
	// processes (instances.mode: group): read only the slot's partitions.
	Slot *Slot
	// Log is the job's logger.
	Log zerolog.Logger
	// KafkaHooks, if not nil, returns the franz-go hooks to install
	// (kgo.WithHooks) on one Kafka client the source makes, named client
	// ("source-0" for reader 0's, "source-admin"): the runtime's client
	// metrics. Call it once per client; it is safe from any goroutine.
	KafkaHooks func(client string) []kgo.Hook
}

var kinds = registry.Of[Kind]{What: "source kind"}

// Register adds a source kind, and its config to the config layer. Call it
// from the kind's package init; registering a name twice panics.
func Register(k Kind) {
	if k.Open == nil || k.Config == nil {
		panic(fmt.Sprintf("source: kind %q is incomplete", k.Name))
	}
	kinds.Add(k.Name, k)
	config.RegisterKind(config.Kind{Section: config.SectionSource, Name: k.Name, Summary: k.Summary, Default: k.Default, New: k.Config})
}

// Open opens the source a job's source: section configures.
func Open(ctx context.Context, p config.Plugin, env Env) (Source, error) {
	k, ok := kinds.Get(p.Type)
	if !ok {
		return nil, fmt.Errorf("source.type: %q is not a source kind of this build", p.Type)
	}
	return k.Open(ctx, p.Config, env)
}

// Slot is one of Of slots of a job run in group mode (package group):
// partition p of every topic belongs to slot p mod Of. A slot is run as a
// job of its own; its source reads only its partitions and commits their
// offsets to a consumer group of its own.
type Slot struct {
	Index, Of int
}

// Owns reports whether partition p belongs to the slot; a nil Slot owns
// every partition.
func (s *Slot) Owns(p int32) bool { return s == nil || int(p)%s.Of == s.Index }

// Group is the consumer group the slot commits to: group itself for a nil
// Slot, else group.slot-<index>.
func (s *Slot) Group(group string) string {
	if s == nil {
		return group
	}
	return fmt.Sprintf("%s.slot-%d", group, s.Index)
}
