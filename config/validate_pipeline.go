package config

import (
	"slices"
	"strings"
	"time"
)

func (v *validator) pipeline() {
	p := v.j.Pipeline
	v.atLeast("pipeline.parallelism", p.Parallelism, 1)
	v.atLeast("pipeline.channel_capacity", p.ChannelCapacity, 1)

	const ode = "pipeline.on_decode_error"
	oneOf(v, ode+".policy", "policy", string(p.OnDecodeError.Policy), DecodeFail, DecodeSkip, DecodeDeadLetter)
	topic := p.OnDecodeError.Topic
	switch {
	case p.OnDecodeError.Policy == DecodeDeadLetter && topic == "":
		v.errs.add(ode+".topic", "is required with policy dead_letter")
	case p.OnDecodeError.Policy != DecodeDeadLetter && topic != "":
		v.errs.add(ode+".topic", "is only used with policy dead_letter")
	case v.isSourceTopic(topic):
		v.errs.add(ode+".topic", "%q is also a source topic", topic)
	}

	for i, t := range p.Transforms {
		key := indexKey("pipeline.transforms", i)
		switch {
		case t.Filter != nil:
			v.condition(key+".condition", t.Filter.Condition)
		case t.Project != nil:
			v.project(key, t.Project)
		case t.Dedup != nil:
			v.fieldPath(key+".key", t.Dedup.Key)
			if t.Dedup.TTL < time.Millisecond {
				v.errs.add(key+".ttl", "must be at least 1ms, got %v", t.Dedup.TTL)
			}
		case t.Type == "":
			v.errs.add(key+".type", "is required (one of %s)", orList(transformTypes))
		default:
			v.errs.add(key+".type", "unknown transform type %q (want %s)", t.Type, orList(transformTypes))
		}
	}
}

func (v *validator) isSourceTopic(t string) bool {
	for _, s := range v.j.Source.Topics {
		if s == t && t != "" {
			return true
		}
	}
	return false
}

func (v *validator) condition(key string, c Condition) {
	leaf := c.Field != "" || c.Op != "" || c.Value != nil
	switch {
	case !leaf && c.All == nil && c.Any == nil:
		v.errs.add(key, "is required: {field, op, value}, {all: [...]} or {any: [...]}")
	case leaf && (c.All != nil || c.Any != nil):
		v.errs.add(key, "has field/op and all/any; use one")
	case c.All != nil && c.Any != nil:
		v.errs.add(key, "has both all and any; nest one in the other")
	case c.All != nil:
		v.conditions(key+".all", c.All)
	case c.Any != nil:
		v.conditions(key+".any", c.Any)
	default:
		v.leaf(key, c)
	}
}

func (v *validator) conditions(key string, list []Condition) {
	if len(list) == 0 {
		v.errs.add(key, "needs at least one condition")
	}
	for i, c := range list {
		v.condition(indexKey(key, i), c)
	}
}

func (v *validator) leaf(key string, c Condition) {
	v.fieldPath(key+".field", c.Field)
	switch c.Op {
	case "":
		v.errs.add(key+".op", "is required (one of %s)", orList(ops))
	case OpEq, OpNe:
		if !isScalar(c.Value) {
			v.errs.add(key+".value", "must be a single value for op %s", c.Op)
		}
	case OpGt, OpGte, OpLt, OpLte:
		switch c.Value.(type) {
		case float64, string:
		default:
			v.errs.add(key+".value", "must be a number or a string for op %s", c.Op)
		}
	case OpExists, OpNotExists:
		if c.Value != nil {
			v.errs.add(key+".value", "is not used with op %s", c.Op)
		}
	case OpIn:
		list, ok := c.Value.([]any)
		if !ok || len(list) == 0 {
			v.errs.add(key+".value", "must be a non-empty list for op in")
		}
	default:
		v.errs.add(key+".op", "unknown op %q (want %s)", c.Op, orList(ops))
	}
}

var ops = []string{string(OpEq), string(OpNe), string(OpGt), string(OpGte), string(OpLt), string(OpLte), string(OpExists), string(OpNotExists), string(OpIn)}

func isScalar(x any) bool {
	switch x.(type) {
	case nil, bool, string, float64:
		return true
	}
	return false
}

func (v *validator) project(key string, p *ProjectConfig) {
	switch {
	case p.Keep == nil && p.Drop == nil && p.Rename == nil:
		v.errs.add(key, "project needs keep, drop or rename")
	case p.Keep != nil && p.Drop != nil:
		v.errs.add(key+".drop", "cannot be used with keep")
	}
	v.names(key+".keep", p.Keep, "field")
	v.names(key+".drop", p.Drop, "field")
	targets := map[string]string{}
	for from, to := range p.Rename {
		k := joinKey(key+".rename", from)
		switch other, dup := targets[to]; {
		case to == "":
			v.errs.add(k, "empty new name")
		case dup:
			if other > from { // report the pair the same way whatever the map order
				from, other = other, from
				k = joinKey(key+".rename", from)
			}
			v.errs.add(k, "%q is also the new name of %s", to, other)
		}
		targets[to] = from
	}
}

// fieldPath checks a dotted path into a JSON object: "customer.id".
func (v *validator) fieldPath(key, path string) {
	switch {
	case path == "":
		v.errs.add(key, "is required")
	case slices.Contains(strings.Split(path, "."), ""):
		v.errs.add(key, "%q has an empty path segment", path)
	}
}
