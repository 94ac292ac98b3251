// Package pathtmpl is the path_template of the file and s3 sinks: the
// grammar of a template, its validation, and its expansion into the bucket
// (a relative directory path) of each record, so that a data lake gets
// Hive-style partitions (dt=2026-01-01/hour=05/part-...).
//
// # Grammar
//
//	{yyyy-MM-dd}     the record's Kafka timestamp in UTC: any mix of the
//	                 tokens yyyy (year), MM (month), dd (day), HH (hour,
//	                 00-23), mm (minute) and the separators - _ . / =
//	{field:a.b}      the JSON field a.b of the record value: a string, a
//	                 number or a boolean as its text; missing, null, an
//	                 object or array, or a value that is not JSON gives
//	                 Missing. Every character outside [A-Za-z0-9._=-]
//	                 becomes '_', a value longer than MaxValue is cut to
//	                 it, and one holding ".." (or empty) gives Missing.
//	anything else    literal text: letters, digits, '/', '=', '-', '_', '.'
//
// Parse refuses what would name something other than visible directories
// under the sink's root: an absolute path, "..", an empty segment, a
// segment starting with '.' or '_' (readers skip such names), a segment
// starting with a field (its value, Missing for one, could start with '_';
// write country={field:country}), a segment starting with "part-" (the
// sinks' output names), a segment that could expand past 255 bytes, more
// than MaxSegments segments. So every bucket it expands to is a clean
// relative path of segments that ValidDir accepts.
//
// It owns no file and knows no sink; a Template is immutable and shared,
// an Expander belongs to one writer (it caches the last time bucket, so
// time formatting happens once per hour or minute, not per record).
package pathtmpl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/connector-dev/connector/internal/spec"
)

// Missing is a field's text when the record has no usable value for it.
const Missing = "__missing__"

// MaxValue is the most characters a field's value keeps.
const MaxValue = 100

// maxSegment is the longest directory name a segment may expand to
// (NAME_MAX of common filesystems).
const maxSegment = 255

// MaxSegments is the most directory levels a template may have.
const MaxSegments = 16

// Template is a parsed path_template. It is immutable and safe to share;
// each writer expands it with its own Expander.
type Template struct {
	src   string
	parts []part
	unit  unit // the finest time unit of its tokens; unitNone without any
}

type partKind uint8

const (
	partLiteral partKind = iota
	partTime
	partField
)

// part is a piece of a template: literal text, a time pattern (its
// tokens and separators in order) or a field path.
type part struct {
	kind partKind
	text string   // partLiteral
	time []tok    // partTime
	path []string // partField: the names of the dotted path
}

// tok is one element of a time pattern: a token, or a separator byte.
type tok struct {
	unit unit // unitNone: the separator sep
	sep  byte
}

// unit is a time token, and the span of time it tells apart.
type unit uint8

const (
	unitNone unit = iota
	unitYear
	unitMonth
	unitDay
	unitHour
	unitMinute
)

var tokens = []struct {
	text string
	unit unit
}{{"yyyy", unitYear}, {"MM", unitMonth}, {"dd", unitDay}, {"HH", unitHour}, {"mm", unitMinute}}

// width is the digits of a token's text (a year past 9999 has more).
func (u unit) width() int {
	if u == unitYear {
		return 4
	}
	return 2
}

func literalByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '=' || c == '-' || c == '_' || c == '.'
}

// valueByte reports whether c may stay in a field's text.
func valueByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '=' || c == '-' || c == '_' || c == '.'
}

func timeSep(c byte) bool { return c == '-' || c == '_' || c == '.' || c == '/' || c == '=' }

const grammar = "want a time pattern of yyyy, MM, dd, HH, mm and separators (e.g. {yyyy-MM-dd}, {HH}) or {field:<dotted path>}"

// Parse reads a template; "" is no template (nil, nil). A trailing '/' is
// dropped. The error says what is wrong and where, for the caller to put
// under its key.
func Parse(src string) (*Template, error) {
	s := strings.TrimRight(src, "/")
	if s == "" {
		if src != "" {
			return nil, errors.New("names no directory: only '/'")
		}
		return nil, nil
	}
	if strings.HasPrefix(s, "/") {
		return nil, errors.New("is absolute: a template is a path under the sink's root, without a leading '/'")
	}
	t := &Template{src: s}
	lit := 0 // start of the literal text being read
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '}':
			return nil, fmt.Errorf("'}' at offset %d closes no '{'", i)
		case c == '{':
			if lit < i {
				t.parts = append(t.parts, part{kind: partLiteral, text: s[lit:i]})
			}
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("'{' at offset %d is not closed", i)
			}
			body := s[i+1 : i+1+end]
			if j := strings.IndexByte(body, '{'); j >= 0 {
				return nil, fmt.Errorf("'{' at offset %d is inside braces", i+1+j)
			}
			p, err := parseToken(body)
			if err != nil {
				return nil, err
			}
			t.parts = append(t.parts, p)
			i += end + 1
			lit = i + 1
		case !literalByte(c):
			return nil, fmt.Errorf("character %q at offset %d is not allowed: literal text holds letters, digits, '/', '=', '-', '_' and '.'", c, i)
		}
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{kind: partLiteral, text: s[lit:]})
	}
	for _, p := range t.parts {
		for _, k := range p.time {
			t.unit = max(t.unit, k.unit)
		}
	}
	if err := t.checkSegments(); err != nil {
		return nil, err
	}
	return t, nil
}

// parseToken reads what is between a pair of braces.
func parseToken(body string) (part, error) {
	if path, ok := strings.CutPrefix(body, "field:"); ok {
		names := strings.Split(path, ".")
		for _, n := range names {
			if n == "" {
				return part{}, fmt.Errorf("{%s}: the field path %q has an empty name (want a dotted path such as user.country)", body, path)
			}
		}
		return part{kind: partField, path: names}, nil
	}
	if body == "" {
		return part{}, fmt.Errorf("empty token {}: %s", grammar)
	}
	var toks []tok
	hasUnit := false
next:
	for i := 0; i < len(body); {
		for _, k := range tokens {
			if strings.HasPrefix(body[i:], k.text) {
				toks = append(toks, tok{unit: k.unit})
				hasUnit = true
				i += len(k.text)
				continue next
			}
		}
		if !timeSep(body[i]) {
			return part{}, fmt.Errorf("unknown token {%s}: %s", body, grammar)
		}
		toks = append(toks, tok{sep: body[i]})
		i++
	}
	if !hasUnit {
		return part{}, fmt.Errorf("unknown token {%s}: %s", body, grammar)
	}
	return part{kind: partTime, time: toks}, nil
}

// checkSegments checks each '/'-separated segment as it will expand: what
// it starts with, and its longest expansion.
func (t *Template) checkSegments() error {
	type seg struct {
		shape  strings.Builder // literal text as is, a time digit as '0', a field as '{'
		maxLen int
	}
	segs := []*seg{{}}
	cur := segs[0]
	add := func(c byte, n int) {
		if c == '/' {
			cur = &seg{}
			segs = append(segs, cur)
			return
		}
		cur.shape.WriteByte(c)
		cur.maxLen += n
	}
	for _, p := range t.parts {
		switch p.kind {
		case partLiteral:
			for i := range len(p.text) {
				add(p.text[i], 1)
			}
		case partTime:
			for _, k := range p.time {
				if k.unit == unitNone {
					add(k.sep, 1)
				} else {
					add('0', k.unit.width()+1) // a year may have a fifth digit
				}
			}
		case partField:
			add('{', MaxValue)
		}
	}
	if len(segs) > MaxSegments {
		return fmt.Errorf("has %d segments, more than %d", len(segs), MaxSegments)
	}
	for _, s := range segs {
		shape := s.shape.String()
		switch {
		case shape == "":
			return errors.New("has an empty segment ('//')")
		case shape == "." || shape == ".." || strings.Contains(shape, ".."):
			return fmt.Errorf("segment %q holds '..'", shape)
		case shape[0] == '.' || shape[0] == '_':
			return fmt.Errorf("segment %q starts with %q: readers skip such names, the output would be hidden", shape, shape[0])
		case shape[0] == '{':
			return errors.New("a segment starts with {field:...}: put literal text before it (country={field:country}): a value such as " + Missing + " starts with '_' and would hide the output")
		case strings.HasPrefix(shape, "part-"):
			return fmt.Errorf("segment %q starts with \"part-\", which the sink's output names start with", shape)
		case s.maxLen > maxSegment:
			return fmt.Errorf("segment %q may expand to %d bytes, more than %d", shape, s.maxLen, maxSegment)
		}
	}
	return nil
}

// String returns the template as parsed (without a trailing '/').
func (t *Template) String() string { return t.src }

// ValidDir reports whether dir is a bucket a template can expand to: a
// relative path of non-empty segments of [A-Za-z0-9._=-], none starting
// with '.' or '_' (so none is "." or ".."). Sinks check the buckets they
// read back from a checkpoint with it.
func ValidDir(dir string) bool {
	if dir == "" {
		return false
	}
	for seg := range strings.SplitSeq(dir, "/") {
		if seg == "" || seg[0] == '.' || seg[0] == '_' || len(seg) > maxSegment {
			return false
		}
		for i := range len(seg) {
			if !valueByte(seg[i]) {
				return false
			}
		}
	}
	return true
}

// Join returns the path of name in bucket ("" is the root), as sinks
// record it: '/'-separated whatever the OS.
func Join(bucket, name string) string {
	if bucket == "" {
		return name
	}
	return bucket + "/" + name
}

// Split splits a recorded path into its bucket ("" for the root) and name.
func Split(p string) (bucket, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// Check reports a template Parse refuses under key (a sink's
// path_template).
func Check(p *spec.Problems, key, src string) {
	if _, err := Parse(src); err != nil {
		p.Add(key, "%q: %v", src, err)
	}
}
