package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// TransformType names a built-in transform.
type TransformType string

// Transform types.
const (
	TransformFilter  TransformType = "filter"
	TransformProject TransformType = "project"
	TransformDedup   TransformType = "dedup"
)

// Transform is one step of pipeline.transforms. Exactly one of Filter,
// Project and Dedup is set, the one Type names.
type Transform struct {
	Type    TransformType
	Line    int // line of the list item in the config file; 0 if built in code
	Filter  *FilterConfig
	Project *ProjectConfig
	Dedup   *DedupConfig
}

// FilterConfig keeps the records whose value satisfies Condition and drops
// the rest.
//
//	{type: filter, condition: {field: status, op: in, value: [paid, shipped]}}
type FilterConfig struct {
	Condition Condition `yaml:"condition"`
}

// Condition is a test on a JSON record value. It is either a leaf (Field and
// Op, with Value as Op needs) or a combination (All: every sub-condition holds;
// Any: at least one does), never both.
//
// Field is a dotted path into nested objects ("customer.id"). Value is a
// string, a float64 (every YAML number), a bool or nil; for "in", a []any of
// those. A leaf on a field the record lacks is false, except for
// "not_exists".
type Condition struct {
	Field string      `yaml:"field,omitempty"`
	Op    Op          `yaml:"op,omitempty"`
	Value any         `yaml:"value,omitempty"`
	All   []Condition `yaml:"all,omitempty"`
	Any   []Condition `yaml:"any,omitempty"`
}

// Op is a comparison in a Condition.
type Op string

// Ops. Equality compares JSON values (numbers as float64). Order compares two
// numbers, or two strings byte-wise (ISO dates order correctly).
const (
	OpEq        Op = "eq"         // field == value (value: a scalar, may be null)
	OpNe        Op = "ne"         // field present and != value
	OpGt        Op = "gt"         // field > value (value: a number or a string)
	OpGte       Op = "gte"        // field >= value
	OpLt        Op = "lt"         // field < value
	OpLte       Op = "lte"        // field <= value
	OpExists    Op = "exists"     // field present, even if null (no value)
	OpNotExists Op = "not_exists" // field absent (no value)
	OpIn        Op = "in"         // field equals one of value (a non-empty list of scalars)
)

// ProjectConfig reshapes a JSON object value: Keep (only these top-level
// fields) or Drop (all but these), never both; then Rename (old -> new).
//
//	{type: project, keep: [id, customer, amount, status], rename: {customer: customer_id}}
type ProjectConfig struct {
	Keep   []string          `yaml:"keep,omitempty"`
	Drop   []string          `yaml:"drop,omitempty"`
	Rename map[string]string `yaml:"rename,omitempty"`
}

// DedupConfig drops a record whose Key field value was already seen within
// TTL. The seen keys are keyed state (Pebble), so they survive restarts.
//
//	{type: dedup, key: id, ttl: 10m}
type DedupConfig struct {
	Key string        `yaml:"key"`           // dotted path of the field; required
	TTL time.Duration `yaml:"ttl,omitempty"` // default 10m, >= 1ms
}

// MarshalYAML writes the transform as it is written in a config file: its
// type and its typed settings side by side.
func (t Transform) MarshalYAML() (any, error) {
	var settings any
	switch {
	case t.Filter != nil:
		settings = t.Filter
	case t.Project != nil:
		settings = t.Project
	case t.Dedup != nil:
		settings = t.Dedup
	}
	var n yaml.Node
	if err := n.Encode(settings); err != nil {
		return nil, err
	}
	typ := []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "type"},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(t.Type)},
	}
	if n.Kind != yaml.MappingNode {
		n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	n.Content = append(typ, n.Content...)
	return &n, nil
}

// newSettings returns a fresh typed settings struct for typ and stores
// it in t, or nil for an unknown type.
func (t *Transform) newSettings(typ TransformType) any {
	switch typ {
	case TransformFilter:
		t.Filter = &FilterConfig{}
		return t.Filter
	case TransformProject:
		t.Project = &ProjectConfig{}
		return t.Project
	case TransformDedup:
		t.Dedup = &DedupConfig{}
		return t.Dedup
	}
	return nil
}
