package transform

import (
	"bytes"
	"strings"

	"github.com/connector-dev/connector/internal/jsonesc"
	"github.com/connector-dev/connector/record"
)

// FieldReader reads one field of JSON object record values, for code outside
// this package that routes records by a field (a sink's topic or key). It
// reuses its buffers: one per goroutine, not safe for concurrent use.
type FieldReader struct {
	path []string
	d    document
	buf  []byte
}

// NewFieldReader reads the field at path, a dotted path into nested objects
// ("customer.id"); it must have no empty segment.
func NewFieldReader(path string) *FieldReader {
	return &FieldReader{path: strings.Split(path, ".")}
}

// Get returns the field of r's value as text: a JSON string's content,
// decoded, or any other value's JSON text. found is false when the field is
// absent or null. An error (wrapping ErrDecode) means the value is not a
// JSON object. The result is valid until the next Get.
func (f *FieldReader) Get(r *record.Record) (text []byte, found bool, err error) {
	raw, found, err := f.Raw(r)
	if !found {
		return nil, false, err
	}
	return f.Text(raw), true, nil
}

// Raw returns the field of r's value as its JSON text (a string with its
// quotes), a part of r.Value, having checked that the whole value is JSON.
// found is false when the field is absent or null; an error (wrapping
// ErrDecode) means the value is not a JSON object.
func (f *FieldReader) Raw(r *record.Record) (raw []byte, found bool, err error) {
	f.d.reset(r)
	if len(f.path) == 1 {
		raw, found, err = f.d.find(f.path[0])
	} else {
		raw, found, err = f.d.get(f.path)
	}
	if err != nil || !found || raw[0] == 'n' {
		return nil, false, err
	}
	return raw, true, nil
}

// Text is what Get returns for the JSON text raw: a string's content,
// decoded, or the text itself. The result is valid until the next call.
func (f *FieldReader) Text(raw []byte) []byte {
	if raw[0] != '"' {
		return raw
	}
	f.buf = appendUnquoted(f.buf[:0], raw)
	return f.buf
}

// FieldsReader reads several fields of JSON object record values with one
// parse per record, for sinks that map fields to columns. Like FieldReader,
// one per goroutine.
type FieldsReader struct {
	paths [][]string
	d     document
	out   [][]byte
}

// NewFieldsReader reads the fields at paths, dotted paths as for
// NewFieldReader.
func NewFieldsReader(paths []string) *FieldsReader {
	f := &FieldsReader{paths: make([][]string, len(paths)), out: make([][]byte, len(paths))}
	for i, p := range paths {
		f.paths[i] = strings.Split(p, ".")
	}
	return f
}

// Read returns each field's raw JSON text (a string with its quotes), in
// the order of the paths; nil for a field that is absent. JSON null is
// returned as "null". An error (wrapping ErrDecode) means the value is not
// a JSON object. The result is valid until the next Read.
func (f *FieldsReader) Read(r *record.Record) ([][]byte, error) {
	f.d.reset(r)
	for i, p := range f.paths {
		raw, found, err := f.d.get(p)
		if err != nil {
			return nil, err
		}
		f.out[i] = nil
		if found {
			f.out[i] = raw
		}
	}
	return f.out, nil
}

// Unquote decodes a JSON string's raw text (with its quotes), as Read
// returns it, for output that must be text: a \u escape of a lone
// surrogate becomes U+FFFD, as encoding/json makes it (the transforms'
// own comparisons keep it apart: unquote).
func Unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	return string(jsonesc.Append(nil, raw[1:len(raw)-1], false))
}
