package config

import (
	"reflect"

	"go.yaml.in/yaml/v3"
)

// transforms decodes pipeline.transforms: a list of mappings, each with a
// "type" that decides which typed settings struct the other keys go into.
func (d *decoder) transforms(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.errs.addAt(n.Line, path, "expected a list, got %s", kindName(n))
		return
	}
	// Every item gets a Transform, even a broken one, so that indexes in
	// validation's keys match the file's.
	out := make([]Transform, len(n.Content))
	for i, item := range n.Content {
		key := indexKey(path, i)
		item = resolveAlias(item)
		d.src.lines[key] = item.Line
		out[i].Line = item.Line
		d.transform(item, key, &out[i])
	}
	v.Set(reflect.ValueOf(out))
	d.markSet(path, len(out) > 0)
}

// transform decodes one list item into t.
func (d *decoder) transform(item *yaml.Node, key string, t *Transform) {
	if item.Kind != yaml.MappingNode {
		d.errs.addAt(item.Line, key, "expected a mapping with a type, got %s", kindName(item))
		return
	}
	typeKey := key + ".type"
	typeNode := mappingValue(item, "type")
	if typeNode == nil || isNull(typeNode) {
		d.errs.addAt(item.Line, typeKey, "is required (one of %s)", orList(transformTypes))
		return
	}
	s, ok := d.scalar(typeNode, typeKey, "a string")
	if !ok {
		return
	}
	t.Type = TransformType(s)
	settings := t.newSettings(t.Type)
	if settings == nil {
		d.errs.addAt(typeNode.Line, typeKey, "unknown transform type %q (want %s)", s, orList(transformTypes))
		return
	}
	d.src.set[typeKey] = true
	d.mapping(item, key, reflect.ValueOf(settings).Elem(), "type")
}

var transformTypes = []string{string(TransformFilter), string(TransformProject), string(TransformDedup)}

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
	s, ok := d.scalar(n, path, "a scalar")
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

// orList writes "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	out := words[0]
	for _, w := range words[1 : len(words)-1] {
		out += ", " + w
	}
	return out + " or " + words[len(words)-1]
}
