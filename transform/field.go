package transform

import (
	"strings"

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
	f.d.reset(r)
	raw, found, err := f.d.get(f.path)
	if err != nil || !found || raw[0] == 'n' {
		return nil, false, err
	}
	if raw[0] != '"' {
		return raw, true, nil
	}
	f.buf = append(f.buf[:0], unquote(raw)...)
	return f.buf, true, nil
}
