package config

import (
	"go.yaml.in/yaml/v3"
)

// Limits on the shape of a job file. A job needs a few hundred values at
// most; these are far above that and far below what could exhaust memory
// or time. yaml.v3 hands aliases over unexpanded (a yaml.Node points to
// its anchor), so an anchor that contains itself is a cycle and nine
// anchors of nine aliases each are billions of values once walked: the
// decoder follows aliases, so the document is measured as the decoder will
// see it before anything is decoded.
const (
	// maxFileSize bounds the file, before YAML parsing.
	maxFileSize = 1 << 20
	// maxDepth bounds the nesting of mappings and lists, aliases
	// expanded: a filter condition forty levels deep is about 85.
	maxDepth = 100
	// maxValues bounds the values (scalars, mappings, lists) of the
	// document with every alias expanded. Decoding, defaults and
	// validation take a few microseconds per value, so Load stays well
	// under a second up to it.
	maxValues = 50_000
	// maxProblems bounds the problems reported for one file; the rest
	// are counted.
	maxProblems = 100
)

// measure walks the document under root as the decoder will, following
// aliases, and reports to errs the first limit the document exceeds: an
// alias inside the value it refers to, more than maxDepth levels, or more
// than maxValues values. It reports false if it found one; the document
// must then not be decoded. It stops at the limits, so it is fast on any
// input.
func measure(root *yaml.Node, errs *collector) bool {
	m := &measurer{errs: errs, open: map[*yaml.Node]bool{}}
	m.walk(root, "", 1, nil, "")
	return !m.failed
}

type measurer struct {
	errs   *collector
	open   map[*yaml.Node]bool // the values that contain the one being walked
	values int
	failed bool
}

// walk counts n and what it contains; path is n's key. via is the
// outermost alias that led here (nil if none) and viaPath its key: a
// problem found under an alias is reported where the alias is written.
func (m *measurer) walk(n *yaml.Node, path string, depth int, via *yaml.Node, viaPath string) {
	if m.failed {
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		target := resolveAlias(n)
		if m.open[target] {
			m.fail(n.Line, path, "alias *%s refers to a value that contains it (&%s on line %d)", n.Value, target.Anchor, target.Line)
			return
		}
		if via == nil {
			via, viaPath = n, path
		}
		n = target
	}
	m.values++
	switch {
	case m.values > maxValues && via != nil:
		m.fail(via.Line, viaPath, "aliases expand the file to more than %d values; refusing it", maxValues)
		return
	case m.values > maxValues:
		m.fail(n.Line, topKey(path), "the file has more than %d values; refusing it", maxValues)
		return
	case depth > maxDepth && via != nil:
		m.fail(via.Line, viaPath, "nested more than %d levels deep", maxDepth)
		return
	case depth > maxDepth:
		m.fail(n.Line, topKey(path), "nested more than %d levels deep", maxDepth)
		return
	}
	m.open[n] = true
	defer delete(m.open, n)
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			m.walk(c, path, depth, via, viaPath)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			m.walk(k, path, depth+1, via, viaPath)
			m.walk(n.Content[i+1], joinKey(path, k.Value), depth+1, via, viaPath)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			m.walk(c, indexKey(path, i), depth+1, via, viaPath)
		}
	}
}

func (m *measurer) fail(line int, key, format string, args ...any) {
	m.failed = true
	m.errs.addAt(line, key, format, args...)
}

// topKey returns the first key of a dotted path: "pipeline" for
// "pipeline.transforms[0]".
func topKey(path string) string {
	for i := range len(path) {
		if path[i] == '.' || path[i] == '[' {
			return path[:i]
		}
	}
	return path
}
