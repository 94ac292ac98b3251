package config

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/internal/spec"
)

// plugins decodes a list of plugins (pipeline.transforms): each item a
// mapping with a type. Every item gets a Plugin, even a broken one, so that
// indexes in validation's keys match the file's.
func (d *decoder) plugins(n *yaml.Node, path string, v reflect.Value, section string) {
	if n.Kind != yaml.SequenceNode {
		d.errs.addAt(n.Line, path, "expected a list, got %s", kindName(n))
		return
	}
	out := make([]Plugin, len(n.Content))
	for i, item := range n.Content {
		key := indexKey(path, i)
		item = resolveAlias(item)
		d.src.lines[key] = item.Line
		if item.Kind != yaml.MappingNode {
			d.errs.addAt(item.Line, key, "expected a mapping with a type, got %s", kindName(item))
			continue
		}
		d.plugin(item, key, &out[i], section)
	}
	v.Set(reflect.ValueOf(out))
	d.markSet(path, len(out) > 0)
}

// plugin decodes one plugin section: its type picks the registered kind,
// whose config struct takes the other keys. A section with a default kind
// (source:) may leave the type out, or be absent (n null).
func (d *decoder) plugin(n *yaml.Node, key string, p *Plugin, section string) {
	p.Line = n.Line
	if !isNull(n) && n.Kind != yaml.MappingNode {
		d.errs.addAt(n.Line, key, "expected a mapping with a type, got %s", kindName(n))
		return
	}
	typeKey := key + ".type"
	var typeNode *yaml.Node
	if n.Kind == yaml.MappingNode {
		typeNode = mappingValue(n, "type")
	}
	if typeNode != nil && !isNull(typeNode) {
		s, ok := d.scalar(typeNode, typeKey, "a string", false)
		if !ok {
			return
		}
		p.Type = s
		d.src.set[typeKey] = true
	}
	if p.Type == "" {
		k, ok := defaultKind(section)
		if !ok {
			d.errs.addAt(n.Line, typeKey, "is required (one of %s)", orList(kindNames(section)))
			return
		}
		p.Type = k.Name
	}
	k, ok := LookupKind(section, p.Type)
	if !ok {
		line := n.Line
		if typeNode != nil {
			line = typeNode.Line
		}
		d.errs.addAt(line, typeKey, "unknown %s type %q: this build runs %s%s",
			section, p.Type, orList(kindNames(section)), suggest(p.Type, kindNames(section)))
		return
	}
	p.Config = k.New()
	if n.Kind == yaml.MappingNode {
		d.mapping(n, key, reflect.ValueOf(p.Config).Elem(), fmt.Sprintf(" for %s type %s", section, p.Type), "type")
	}
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolveAlias(n.Content[i+1])
		}
	}
	return nil
}

// any decodes a condition value: a scalar, typed as YAML would type it after
// ${VAR} expansion (numbers become float64), or a list of such scalars.
func (d *decoder) any(n *yaml.Node, path string) (any, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		return d.typedScalar(n, path)
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			key := indexKey(path, i)
			item = resolveAlias(item)
			d.src.lines[key] = item.Line
			if item.Kind != yaml.ScalarNode {
				d.errs.addAt(item.Line, key, "expected a scalar, got %s", kindName(item))
				ok = false
				continue
			}
			x, good := d.typedScalar(item, key)
			ok = ok && good
			list = append(list, x)
		}
		return list, ok
	}
	d.errs.addAt(n.Line, path, "expected a scalar or a list, got %s", kindName(n))
	return nil, false
}

// typedScalar expands n and types the result: a quoted or explicitly tagged
// scalar keeps its type, a plain one is resolved again (so "${MIN:-10}" is
// the number 10).
func (d *decoder) typedScalar(n *yaml.Node, path string) (any, bool) {
	s, ok := d.scalar(n, path, "a scalar", false)
	if !ok {
		return nil, false
	}
	r := yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: n.Style}
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		r.Tag = "!!str"
	case n.Style&yaml.TaggedStyle != 0:
		r.Tag = n.Tag
	}
	var x any
	if err := r.Decode(&x); err != nil {
		d.errs.addAt(n.Line, path, "%q is not a %s", s, r.ShortTag())
		return nil, false
	}
	if r.ShortTag() == "!!int" {
		if err := spec.CheckLeadingZero(s); err != nil { // yaml.v3 reads 010 as octal 8
			d.errs.addAt(n.Line, path, "%v", err)
			return nil, false
		}
	}
	switch x := x.(type) {
	case nil, bool, string, float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return s, true // timestamps and the like: keep the text
}
