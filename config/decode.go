package config

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/internal/spec"
)

// decoder fills Go values from yaml nodes by their `yaml` tags. It expands
// ${VAR} in every scalar before converting it, records every key's line in
// the origin, and reports every problem to the collector instead of stopping
// at the first.
type decoder struct {
	src    *origin
	errs   *collector
	lookup LookupEnv
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
	secretType   = reflect.TypeFor[Secret]()
	pluginType   = reflect.TypeFor[Plugin]()

	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// mapping decodes mapping node n into struct v. Keys in skip are known but
// decoded by the caller. unknown, if not empty, names the struct in
// "unknown key" messages ("for sink type file").
func (d *decoder) mapping(n *yaml.Node, path string, v reflect.Value, unknown string, skip ...string) {
	n = resolveAlias(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errs.addAt(n.Line, path, "expected a mapping, got %s", kindName(n))
		return
	}
	fields := fieldsByTag(v.Type())
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := joinKey(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			d.errs.addAt(k.Line, path, "a key must be a string, got %s", kindName(k))
			continue
		}
		if l, dup := first[k.Value]; dup {
			d.errs.addAt(k.Line, key, "duplicate key (first at line %d)", l)
			continue
		}
		first[k.Value] = k.Line
		d.src.lines[key] = k.Line
		if slices.Contains(skip, k.Value) {
			continue
		}
		idx, ok := fields[k.Value]
		if !ok {
			d.errs.addAt(k.Line, key, "unknown key%s%s", unknown, suggest(k.Value, knownKeys(fields, nil)))
			continue
		}
		d.value(val, key, v.FieldByIndex(idx), v.Type().FieldByIndex(idx).Tag.Get("kind"))
	}
}

// value decodes n into v, which is addressable. section is the field's
// `kind` tag: the section of the registered kinds a Plugin (or a list of
// them) holds.
func (d *decoder) value(n *yaml.Node, path string, v reflect.Value, section string) {
	n = resolveAlias(n)
	t := v.Type()
	if t == pluginType {
		d.plugin(n, path, v.Addr().Interface().(*Plugin), section)
		return
	}
	if isNull(n) {
		if t.Kind() == reflect.Interface && t.NumMethod() == 0 {
			v.Set(reflect.ValueOf(spec.Null)) // given as null: not absent
		}
		return
	}
	switch {
	case t.Kind() == reflect.Slice && t.Elem() == pluginType:
		d.plugins(n, path, v, section)
		return
	case t.Kind() == reflect.Struct && !spec.IsScalar(t):
		d.mapping(n, path, v, "")
		return
	case t.Kind() == reflect.Slice:
		d.list(n, path, v)
		return
	case t.Kind() == reflect.Map:
		d.stringMap(n, path, v)
		return
	case t.Kind() == reflect.Interface:
		if x, ok := d.any(n, path); ok && x != nil {
			v.Set(reflect.ValueOf(x))
			d.markSet(path, true)
		} else if ok && t.NumMethod() == 0 {
			v.Set(reflect.ValueOf(spec.Null)) // ${VAR} that expanded to null
		}
		return
	}
	s, ok := d.scalar(n, path, cmp.Or(expectedName(t), "a string"), t == secretType)
	if !ok || s == "" { // an empty value means "use the default"
		return
	}
	if err := spec.SetScalar(v, s); err != nil {
		if want := expectedName(t); want != "" && !errors.Is(err, spec.ErrLeadingZero) {
			d.errs.addAt(n.Line, path, "%q is not %s", s, want)
		} else {
			d.errs.addAt(n.Line, path, "%v", err) // the type's own words
		}
		return
	}
	d.src.set[path] = true
}

func (d *decoder) markSet(path string, ok bool) {
	if ok {
		d.src.set[path] = true
	}
}

// scalar returns n's value with ${VAR} expanded; ok is false (and the problem
// recorded) when n is not a scalar or the expansion fails. The problem
// with a secret's expansion does not quote the value.
func (d *decoder) scalar(n *yaml.Node, path, want string, secret bool) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errs.addAt(n.Line, path, "expected %s, got %s", want, kindName(n))
		return "", false
	}
	s, err := expand(n.Value, d.lookup)
	if err != nil {
		d.errs.addAt(n.Line, path, "%s", errorOf(err, n.Value, secret))
		return "", false
	}
	if s != n.Value {
		d.src.written[path] = n.Value
	}
	return s, true
}

// list decodes a sequence (or a single scalar, as a list of one) into a
// slice of strings or of structs.
func (d *decoder) list(n *yaml.Node, path string, v reflect.Value) {
	elem := v.Type().Elem()
	items := []*yaml.Node{n}
	switch {
	case n.Kind == yaml.SequenceNode:
		items = n.Content
	case n.Kind != yaml.ScalarNode || elem.Kind() != reflect.String:
		d.errs.addAt(n.Line, path, "expected a list, got %s", kindName(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), 0, len(items))
	for i, item := range items {
		key := indexKey(path, i)
		d.src.lines[key] = item.Line
		e := reflect.New(elem).Elem()
		if elem.Kind() == reflect.String {
			s, ok := d.scalar(resolveAlias(item), key, "a string", false)
			if !ok {
				continue
			}
			e.SetString(s)
		} else {
			d.mapping(item, key, e, "")
		}
		out = reflect.Append(out, e)
	}
	v.Set(out)
	d.markSet(path, out.Len() > 0)
	d.rememberWrittenList(path, items)
}

// stringMap decodes a mapping of strings to strings.
func (d *decoder) stringMap(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.errs.addAt(n.Line, path, "expected a mapping, got %s", kindName(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], resolveAlias(n.Content[i+1])
		key := joinKey(path, k.Value)
		d.src.lines[key] = k.Line
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.errs.addAt(k.Line, key, "duplicate key")
			continue
		}
		s, ok := d.scalar(val, key, "a string", false)
		if ok {
			m.SetMapIndex(reflect.ValueOf(k.Value), reflect.ValueOf(s))
		}
	}
	v.Set(m)
	d.markSet(path, m.Len() > 0)
}

// fieldsByTag maps yaml key names to field index paths of struct type t.
// A field tagged `yaml:",inline"` (a struct) contributes its own keys.
func fieldsByTag(t reflect.Type) map[string][]int {
	m := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case name == "" && strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			for k, idx := range fieldsByTag(f.Type) {
				m[k] = append([]int{i}, idx...)
			}
		case name != "":
			m[name] = []int{i}
		}
	}
	return m
}

func knownKeys(fields map[string][]int, extra []string) []string {
	keys := append([]string(nil), extra...)
	for k := range fields {
		keys = append(keys, k)
	}
	return keys
}

// expectedName names what a scalar of type t must be, for "is not" messages;
// "" for types whose parse errors say it in their own words.
func expectedName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration"
	case t == byteSizeType:
		return "a byte size"
	case t == secretType:
		return "a string"
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return ""
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64, t.Kind() == reflect.Int32:
		return "an integer"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	}
	return "a string"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is a YAML null (~, null, or nothing at all).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0
}

// rememberWrittenList records a list of strings as the file wrote it when
// one of its items came from ${VAR}: a normalized list (brokers split at
// commas) has other items than the file, so Dump shows the written ones.
func (d *decoder) rememberWrittenList(path string, items []*yaml.Node) {
	var written []string
	interpolated := false
	for i, item := range items {
		item = resolveAlias(item)
		if item.Kind != yaml.ScalarNode {
			return // a list of mappings: its scalars are remembered one by one
		}
		written = append(written, item.Value)
		_, ok := d.src.written[indexKey(path, i)]
		interpolated = interpolated || ok
	}
	if interpolated {
		d.src.writtenList[path] = written
	}
}
