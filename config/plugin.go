package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Plugin is a section that a registered kind configures: source:, sink:
// and each item of pipeline.transforms. Its keys are "type" (the kind's
// name) and the keys of the kind's own config struct, side by side:
//
//	sink:
//	  type: file       # Type
//	  path: ./out      # Config.(*file.Config).Path
type Plugin struct {
	Type string `yaml:"type"`
	// Line is where the section starts in the file; 0 for code.
	Line int `yaml:"-"`
	// Config points to the kind's config struct (Kind.New), decoded,
	// defaulted and validated. Nil only when the type is unknown.
	Config any `yaml:",inline"`
}

// JobValidator is implemented by a kind's config that checks itself against
// the rest of the job (a sink topic that must not be a source topic). p
// takes full keys from the top of the file.
type JobValidator interface {
	ValidateJob(j *Job, p *Problems)
}

// JobDefaulter is implemented by a kind's config that gives a key outside
// its section a default of its own: a sink that is at-least-once whatever
// the job says defaults checkpoint.mode to at_least_once. given reports
// whether the file gave a key; DefaultJob sets only keys it did not give,
// before the tags' defaults are filled.
type JobDefaulter interface {
	DefaultJob(j *Job, given func(key string) bool)
}

// MarshalYAML writes the plugin as a file holds it: its type and its
// settings side by side.
func (p Plugin) MarshalYAML() (any, error) {
	var n yaml.Node
	if p.Config != nil {
		if err := n.Encode(p.Config); err != nil {
			return nil, fmt.Errorf("encode %s config: %w", p.Type, err)
		}
	}
	if n.Kind != yaml.MappingNode {
		n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	typ := []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "type"},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: p.Type},
	}
	n.Content = append(typ, n.Content...)
	return &n, nil
}

// resolve gives a plugin of a section with a default kind (source: kafka)
// that default when it names none, and makes the config struct of a known
// type that has none yet (a Plugin built in code with just a type).
func (p *Plugin) resolve(section string) {
	if p.Type == "" {
		if k, ok := defaultKind(section); ok {
			p.Type = k.Name
		}
	}
	if p.Config == nil {
		if k, ok := LookupKind(section, p.Type); ok {
			p.Config = k.New()
		}
	}
}
