package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/record"
)

// Op is a comparison of a FilterConfig.
type Op string

// Ops. A leaf on a field the record lacks is false, except not_exists.
// Equality is typed: a string equals a string with the same content, a
// number a number with the same float64 value (so 1 == 1.0; integers
// beyond 2^53 may compare equal to their neighbours), a bool a bool, null
// null; values of different types are never equal. Order compares two
// numbers, or two strings byte-wise (ISO-8601 dates order correctly); with
// any other pair of types it is false.
const (
	OpEq        Op = "eq"         // field == value
	OpNe        Op = "ne"         // field present and != value
	OpGt        Op = "gt"         // field > value
	OpGte       Op = "gte"        // field >= value
	OpLt        Op = "lt"         // field < value
	OpLte       Op = "lte"        // field <= value
	OpExists    Op = "exists"     // field present (even if null)
	OpNotExists Op = "not_exists" // field absent
	OpIn        Op = "in"         // field == one of values
)

// Enum lists the comparisons (for the config's JSON Schema).
func (Op) Enum() []string {
	return []string{string(OpEq), string(OpNe), string(OpGt), string(OpGte), string(OpLt), string(OpLte), string(OpExists), string(OpNotExists), string(OpIn)}
}

func init() {
	Register(Kind{
		Name:    KindFilter,
		Summary: "keeps the records whose JSON value satisfies a condition",
		Config:  func() any { return new(FilterConfig) },
		New:     func(cfg any, _ KV) (Transform, error) { return NewFilter(cfg.(*FilterConfig).Condition) },
	})
}

// FilterConfig is an item of pipeline.transforms with type: filter.
//
//	{type: filter, condition: {field: status, op: in, value: [paid, shipped]}}
type FilterConfig struct {
	Condition Condition `yaml:"condition" doc:"{field, op, value}, {all: [...]} or {any: [...]}"`
}

// Validate reports the first problem of the condition. A file must give
// eq and ne their value, null included (value: null): YAML cannot tell a
// forgotten value from a null one, and comparing with null would drop
// nearly every record without a word.
func (c *FilterConfig) Validate(p *spec.Problems) {
	_, err := compileCond(c.Condition, KindFilter+".condition")
	if err == nil {
		err = valueOmitted(c.Condition, KindFilter+".condition")
	}
	report(p, KindFilter, err)
}

// valueOmitted finds an eq or ne leaf without a value: nil, where a value
// given as null is spec.Null.
func valueOmitted(cfg Condition, key string) error {
	for name, subs := range map[string][]Condition{"all": cfg.All, "any": cfg.Any} {
		for i, sub := range subs {
			if err := valueOmitted(sub, key+"."+name+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	if (cfg.Op == OpEq || cfg.Op == OpNe) && cfg.Value == nil {
		return configError(key+".value", "is required with op %s (write value: null to compare with JSON null)", cfg.Op)
	}
	return nil
}

// Condition keeps the records whose value satisfies it and drops the
// rest. It is a leaf (Field and Op, with Value or Values as Op needs) or a
// combination: All (every sub-condition holds) or Any (at least one does).
//
// Field is a dotted path into nested objects ("customer.id"); a field whose
// name contains a dot cannot be addressed. Value is a string, a number (any
// Go integer or float type, or json.Number), a bool, or nil or spec.Null
// for JSON null (a file's `value: null` is spec.Null; a file must give one,
// see FilterConfig.Validate).
// For OpIn the candidates are Values, or Value if it is a []any.
type Condition struct {
	Field  string      `yaml:"field,omitempty" doc:"dotted path of a field (customer.id)"`
	Op     Op          `yaml:"op,omitempty" doc:"eq ne gt gte lt lte exists not_exists in"`
	Value  any         `yaml:"value,omitempty" doc:"a scalar, required with eq and ne (value: null compares with JSON null); a list for op in"`
	Values []any       `yaml:"-"`
	All    []Condition `yaml:"all,omitempty" doc:"every sub-condition holds"`
	Any    []Condition `yaml:"any,omitempty" doc:"at least one sub-condition holds"`
}

// Filter is the filter transform. Build it with NewFilter.
type Filter struct {
	c    cond
	solo solo
}

var _ Transform = (*Filter)(nil)

// NewFilter validates cfg and returns its Filter.
func NewFilter(cfg Condition) (*Filter, error) {
	c, err := compileCond(cfg, KindFilter+".condition")
	if err != nil {
		return nil, err
	}
	return &Filter{c: c}, nil
}

// Kind returns "filter".
func (f *Filter) Kind() string { return KindFilter }

// Apply keeps r if its value satisfies the condition.
func (f *Filter) Apply(r *record.Record) (bool, error) { return f.solo.apply(f, r) }

func (f *Filter) applyDoc(_ *record.Record, d *document) (bool, error) {
	return f.c.match(d)
}

// scalar is a JSON scalar from the config.
type scalar struct {
	kind byte // '"' string, '0' number, 'b' bool, 'z' null
	s    string
	n    float64
	b    bool
}

type cond struct {
	path     []string
	op       Op
	val      scalar
	vals     []scalar
	all, any []cond
}

func compileCond(cfg Condition, key string) (cond, error) {
	leaf := cfg.Field != "" || cfg.Op != ""
	switch {
	case leaf && (cfg.All != nil || cfg.Any != nil):
		return cond{}, configError(key, "a condition is either field/op or all/any, not both")
	case cfg.All != nil && cfg.Any != nil:
		return cond{}, configError(key, "a condition is all or any, not both")
	case cfg.All != nil || cfg.Any != nil:
		subs, name := cfg.All, "all"
		if cfg.Any != nil {
			subs, name = cfg.Any, "any"
		}
		if len(subs) == 0 {
			return cond{}, configError(key+"."+name, "is empty")
		}
		out := make([]cond, len(subs))
		for i, sub := range subs {
			var err error
			if out[i], err = compileCond(sub, key+"."+name+"["+strconv.Itoa(i)+"]"); err != nil {
				return cond{}, err
			}
		}
		if name == "all" {
			return cond{all: out}, nil
		}
		return cond{any: out}, nil
	}
	if cfg.Value == spec.Null {
		cfg.Value = nil
	}
	c := cond{op: cfg.Op}
	if cfg.Field == "" {
		return c, configError(key+".field", "is required")
	}
	c.path = strings.Split(cfg.Field, ".")
	for _, p := range c.path {
		if p == "" {
			return c, configError(key+".field", "%q has an empty path segment", cfg.Field)
		}
	}
	var err error
	switch cfg.Op {
	case OpExists, OpNotExists:
		if cfg.Value != nil || cfg.Values != nil {
			return c, configError(key+".value", "%s takes no value", cfg.Op)
		}
	case OpEq, OpNe, OpGt, OpGte, OpLt, OpLte:
		if cfg.Values != nil {
			return c, configError(key+".values", "only op in takes values")
		}
		if c.val, err = toScalar(cfg.Value, key+".value"); err != nil {
			return c, err
		}
		if cfg.Op != OpEq && cfg.Op != OpNe && c.val.kind != '"' && c.val.kind != '0' {
			return c, configError(key+".value", "%s needs a number or a string, got %T", cfg.Op, cfg.Value)
		}
	case OpIn:
		vals, vkey := cfg.Values, key+".values"
		if list, ok := cfg.Value.([]any); ok && vals == nil {
			vals, vkey = list, key+".value"
		} else if cfg.Value != nil {
			return c, configError(key+".value", "op in takes a list (values), got %T", cfg.Value)
		}
		if len(vals) == 0 {
			return c, configError(vkey, "op in needs a non-empty list")
		}
		c.vals = make([]scalar, len(vals))
		for i, v := range vals {
			if c.vals[i], err = toScalar(v, vkey+"["+strconv.Itoa(i)+"]"); err != nil {
				return c, err
			}
		}
	case "":
		return c, configError(key+".op", "is required")
	default:
		return c, configError(key+".op", "%q is not one of eq, ne, gt, gte, lt, lte, exists, not_exists, in", cfg.Op)
	}
	return c, nil
}

func toScalar(v any, key string) (scalar, error) {
	switch x := v.(type) {
	case nil:
		return scalar{kind: 'z'}, nil
	case string:
		return scalar{kind: '"', s: x}, nil
	case bool:
		return scalar{kind: 'b', b: x}, nil
	case float64:
		return finite(x, key)
	case float32:
		return finite(float64(x), key)
	case int:
		return scalar{kind: '0', n: float64(x)}, nil
	case int8:
		return scalar{kind: '0', n: float64(x)}, nil
	case int16:
		return scalar{kind: '0', n: float64(x)}, nil
	case int32:
		return scalar{kind: '0', n: float64(x)}, nil
	case int64:
		return scalar{kind: '0', n: float64(x)}, nil
	case uint:
		return scalar{kind: '0', n: float64(x)}, nil
	case uint8:
		return scalar{kind: '0', n: float64(x)}, nil
	case uint16:
		return scalar{kind: '0', n: float64(x)}, nil
	case uint32:
		return scalar{kind: '0', n: float64(x)}, nil
	case uint64:
		return scalar{kind: '0', n: float64(x)}, nil
	case json.Number:
		n, err := x.Float64()
		if err != nil {
			return scalar{}, configError(key, "%q is not a number", x)
		}
		return finite(n, key)
	}
	return scalar{}, configError(key, "must be a string, number, bool or null, got %T", v)
}

// finite is the number n as a scalar. NaN and the infinities are refused:
// no JSON number equals NaN nor is ordered against it (gte and lte would
// keep every record), and JSON has no infinity (a number beyond float64's
// range would be both >= and <= .inf).
func finite(n float64, key string) (scalar, error) {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return scalar{}, configError(key, "must be a finite number, got %v", n)
	}
	return scalar{kind: '0', n: n}, nil
}

func (c *cond) match(d *document) (bool, error) {
	switch {
	case c.all != nil:
		for i := range c.all {
			if ok, err := c.all[i].match(d); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case c.any != nil:
		for i := range c.any {
			if ok, err := c.any[i].match(d); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	raw, found, err := d.get(c.path)
	if err != nil {
		return false, err
	}
	switch c.op {
	case OpExists:
		return found, nil
	case OpNotExists:
		return !found, nil
	}
	if !found {
		return false, nil
	}
	switch c.op {
	case OpEq:
		return equal(raw, &c.val), nil
	case OpNe:
		return !equal(raw, &c.val), nil
	case OpIn:
		for i := range c.vals {
			if equal(raw, &c.vals[i]) {
				return true, nil
			}
		}
		return false, nil
	}
	cmp, ok := compare(raw, &c.val)
	if !ok {
		return false, nil
	}
	switch c.op {
	case OpGt:
		return cmp > 0, nil
	case OpGte:
		return cmp >= 0, nil
	case OpLt:
		return cmp < 0, nil
	default: // OpLte
		return cmp <= 0, nil
	}
}

// kindOf says which scalar kind a raw JSON value is; 0 for objects/arrays.
func kindOf(raw []byte) byte {
	switch c := raw[0]; {
	case c == '"':
		return '"'
	case c == 't' || c == 'f':
		return 'b'
	case c == 'n':
		return 'z'
	case c == '-' || isDigit(c):
		return '0'
	}
	return 0
}

func equal(raw []byte, v *scalar) bool {
	if kindOf(raw) != v.kind {
		return false
	}
	switch v.kind {
	case '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw[1:len(raw)-1]) == v.s
		}
		return unquote(raw) == v.s
	case '0':
		n, err := strconv.ParseFloat(string(raw), 64)
		return err == nil && n == v.n
	case 'b':
		return (raw[0] == 't') == v.b
	}
	return true // both null
}

// compare orders raw against v: numbers numerically, strings byte-wise.
func compare(raw []byte, v *scalar) (int, bool) {
	if kindOf(raw) != v.kind {
		return 0, false
	}
	switch v.kind {
	case '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			return strings.Compare(string(raw[1:len(raw)-1]), v.s), true
		}
		return strings.Compare(unquote(raw), v.s), true
	case '0':
		n, err := strconv.ParseFloat(string(raw), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) { // ±Inf still orders
			return 0, false
		}
		switch {
		case n < v.n:
			return -1, true
		case n > v.n:
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
