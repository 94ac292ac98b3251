package transform

import (
	"fmt"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/registry"
)

// Kind is one transform kind, as it registers itself: its name (the `type`
// of an item of pipeline.transforms), its config struct and its
// constructor. The built-ins (filter, project, dedup) register from this
// package; a transform of another package registers from its init.
type Kind struct {
	// Name is the item's type in the file.
	Name string
	// Summary is one line for help.
	Summary string
	// Stateful kinds keep keyed state in the KV they are given; a job with
	// one is checkpointed with a state store per worker.
	Stateful bool
	// Config returns a pointer to a new, zero config struct (`yaml`,
	// `default` and `doc` tags, and a Validate method; see package
	// internal/spec).
	Config func() any
	// New builds the transform from a config made by Config. kv is the
	// worker's keyed state (nil for a stateless kind).
	New func(cfg any, kv KV) (Transform, error)
}

var kinds = registry.Of[Kind]{What: "transform kind"}

// Register adds a transform kind, and its config to the config layer.
// Registering a name twice panics.
func Register(k Kind) {
	if k.New == nil || k.Config == nil {
		panic(fmt.Sprintf("transform: kind %q is incomplete", k.Name))
	}
	kinds.Add(k.Name, k)
	config.RegisterKind(config.Kind{Section: config.SectionTransform, Name: k.Name, Summary: k.Summary, New: k.Config})
}

func lookup(name string) (Kind, bool) { return kinds.Get(name) }

func names() []string { return kinds.Names() }

// Stateful reports whether any of specs is of a stateful kind.
func Stateful(specs []Spec) bool {
	for _, s := range specs {
		if k, ok := lookup(s.Kind); ok && k.Stateful {
			return true
		}
	}
	return false
}
