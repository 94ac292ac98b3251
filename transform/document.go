package transform

import (
	"bytes"

	"github.com/connector-dev/connector/internal/jsonesc"
	"github.com/connector-dev/connector/record"
)

// document is a record value decoded lazily, once per record: the first
// transform that asks for a field parses the top-level object into a list of
// fields (byte spans into the value, in their original order); nested
// objects are scanned only when a path reaches into them. project edits the
// field list; encode writes it back once, only if something changed.
//
// A document is owned by one goroutine and reused from record to record.
type document struct {
	r      *record.Record
	src    []byte
	fields []field
	rens   []renamed // the new keys of renamed fields (field.ren)
	parsed bool
	err    error
	dirty  bool // fields differ from src: encode before handing the record on
	parses int  // how many values were parsed; tests check decode-once
}

// field is a top-level member. When renamed, ren is 1 + the index of its
// new key in document.rens; the span k0:k1 still points at the old key.
// The scan fills a field in place (nextMember) and clears only ren; the
// new keys live in the document, so a field holds no pointers.
type field struct {
	member
	ren int32
}

// renamed is a renamed field's new key, and that key quoted for JSON.
type renamed struct {
	name  string
	nameQ []byte
}

// rename gives f the new key name (nameQ quoted).
func (d *document) rename(f *field, name string, nameQ []byte) {
	d.rens = append(d.rens, renamed{name, nameQ})
	f.ren = int32(len(d.rens))
}

func (d *document) reset(r *record.Record) {
	d.r, d.src = r, r.Value
	d.fields, d.rens = d.fields[:0], d.rens[:0]
	d.parsed, d.err, d.dirty = false, nil, false
}

// parse decodes the top-level object (once) and validates the whole value.
func (d *document) parse() error {
	if d.parsed {
		return d.err
	}
	d.parsed = true
	d.parses++
	if serr := d.scan(); serr != nil {
		d.fields = d.fields[:0]
		d.err = d.decodeError(serr)
	}
	return d.err
}

func (d *document) decodeError(serr *syntaxError) *DecodeError {
	return &DecodeError{Topic: d.r.Topic, Partition: d.r.Partition, Offset: d.r.Offset, Pos: serr.pos, Msg: serr.msg}
}

func (d *document) scan() *syntaxError {
	b := d.src
	i, empty, err := openObject(b)
	if err != nil {
		return err
	}
	if !empty {
		for {
			n := len(d.fields)
			if n == cap(d.fields) {
				d.fields = append(d.fields, field{})
			}
			d.fields = d.fields[:n+1]
			f := &d.fields[n]
			f.ren = 0
			next, done, err := nextMember(b, i, 1, &f.member)
			if err != nil {
				return err
			}
			if i = next; done {
				break
			}
		}
	}
	return closeObject(b, i)
}

// openObject checks that b, a whole value, is an object: it returns the
// index of its first member, or, with empty, the index after its '}'.
func openObject(b []byte) (i int, empty bool, err *syntaxError) {
	i = skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return i, false, &syntaxError{i, "not a JSON object"}
	}
	if i = skipWS(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1, true, nil
	}
	return i, false, nil
}

// closeObject checks that nothing but space follows the object of b that
// ends before i.
func closeObject(b []byte, i int) *syntaxError {
	if i = skipWS(b, i); i != len(b) {
		return &syntaxError{i, "data after the top-level object"}
	}
	return nil
}

func (d *document) keyIs(f *field, name string) bool {
	if f.ren > 0 {
		return d.rens[f.ren-1].name == name
	}
	if !f.esc { // inline: named is not inlined, and keyIs is on every field's path
		return string(d.src[f.k0:f.k1]) == name
	}
	return f.named(d.src, name)
}

// lookupKey looks f's current key up in m without allocating (unless the
// key has escapes).
func lookupKey[V any](d *document, f *field, m map[string]V) (V, bool) {
	if f.ren > 0 {
		v, ok := m[d.rens[f.ren-1].name]
		return v, ok
	}
	if !f.esc {
		v, ok := m[string(d.src[f.k0:f.k1])]
		return v, ok
	}
	v, ok := m[unquote(d.src[f.k0-1:f.k1+1])]
	return v, ok
}

// get returns the raw bytes of the value at path (a.b.c: nested objects).
// When a key appears twice in an object the last one counts, as with
// encoding/json and JavaScript. A path through a non-object is missing.
func (d *document) get(path []string) ([]byte, bool, error) {
	if err := d.parse(); err != nil {
		return nil, false, err
	}
	var v []byte
	found := false
	for i := len(d.fields) - 1; i >= 0; i-- {
		if f := &d.fields[i]; d.keyIs(f, path[0]) {
			v, found = d.src[f.v0:f.v1], true
			break
		}
	}
	for _, key := range path[1:] {
		if !found {
			break
		}
		v, found = objectGet(v, key)
	}
	return v, found, nil
}

// find is get of a top-level field, name, for a document read for that
// one field (FieldReader): it validates the whole value as parse does but
// keeps no list of fields, comparing each key as it passes (the last one
// named name counts). The document is left unparsed.
func (d *document) find(name string) ([]byte, bool, error) {
	b := d.src
	i, empty, serr := openObject(b)
	if serr != nil {
		return nil, false, d.decodeError(serr)
	}
	var v []byte
	found := false
	if !empty {
		var m member
		for {
			next, done, serr := nextMember(b, i, 1, &m)
			if serr != nil {
				return nil, false, d.decodeError(serr)
			}
			// A key without escapes of another length is not name:
			// no call (named is not inlined) for most keys.
			if (m.esc || m.k1-m.k0 == len(name)) && m.named(b, name) {
				v, found = b[m.v0:m.v1], true
			}
			if i = next; done {
				break
			}
		}
	}
	if serr := closeObject(b, i); serr != nil {
		return nil, false, d.decodeError(serr)
	}
	return v, found, nil
}

// objectGet finds key in obj, an already validated value.
func objectGet(obj []byte, key string) ([]byte, bool) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, false
	}
	i := skipWS(obj, 1)
	if i < len(obj) && obj[i] == '}' {
		return nil, false
	}
	var v []byte
	found := false
	for {
		var m member
		next, done, err := nextMember(obj, i, 1, &m)
		if err != nil {
			return nil, false // cannot happen: validated by parse
		}
		if m.named(obj, key) {
			v, found = obj[m.v0:m.v1], true
		}
		if i = next; done {
			return v, found
		}
	}
}

// encode writes the fields back as a compact object into memory from s.
// Values and unchanged keys are copied byte for byte.
func (d *document) encode(s *slab) []byte {
	n := 2
	for i := range d.fields {
		f := &d.fields[i]
		if f.ren > 0 {
			n += len(d.rens[f.ren-1].nameQ)
		} else {
			n += f.k1 - f.k0 + 2
		}
		n += 1 + f.v1 - f.v0
	}
	if len(d.fields) > 1 {
		n += len(d.fields) - 1
	}
	out := s.alloc(n)[:0]
	out = append(out, '{')
	for i := range d.fields {
		f := &d.fields[i]
		if i > 0 {
			out = append(out, ',')
		}
		if f.ren > 0 {
			out = append(out, d.rens[f.ren-1].nameQ...)
		} else {
			out = append(out, d.src[f.k0-1:f.k1+1]...)
		}
		out = append(out, ':')
		out = append(out, d.src[f.v0:f.v1]...)
	}
	return append(out, '}')
}

// unquote decodes a validated JSON string, quotes included. It is the slow
// path, for strings with escapes.
func unquote(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	return string(appendUnquoted(nil, q))
}

// appendUnquoted appends the content of a validated JSON string (quotes
// included) to dst, decoded; without allocating unless it has escapes.
// Bytes are kept as they are, as the scanner passes them through (bytes
// that are not UTF-8 are not replaced, so two strings told apart without
// an escape are told apart with one), and a \u escape of a lone surrogate
// becomes its own three bytes (WTF-8), not U+FFFD: distinct strings never
// decode to the same text.
func appendUnquoted(dst, q []byte) []byte {
	return jsonesc.Append(dst, q[1:len(q)-1], true)
}

// slab hands out byte slices carved from larger chunks, so re-encoded
// values cost one allocation per chunk rather than one per record. A chunk
// is never reused: it is freed by the GC once no record refers to it, so a
// sink may keep a record's Value as long as it likes.
type slab struct{ buf []byte }

const slabChunk = 64 << 10

func (s *slab) alloc(n int) []byte {
	if n > slabChunk/8 {
		return make([]byte, n)
	}
	if len(s.buf)+n > cap(s.buf) {
		s.buf = make([]byte, 0, slabChunk)
	}
	off := len(s.buf)
	s.buf = s.buf[:off+n]
	return s.buf[off : off+n : off+n]
}
