package file

import (
	"bytes"

	"github.com/connector-dev/connector/sink/internal/recfmt"
)

// encoder turns a record value into the bytes of one record in a part, by
// the rules of package sink/internal/recfmt (shared with the s3 sink):
// jsonl writes the value (a multi-line value compacted) and then '\n'; an
// empty value, or a multi-line value that is not one JSON document, is
// refused with ErrBadRecord. raw writes the value's bytes as they are.
type encoder struct {
	format  string
	scratch bytes.Buffer
}

func (e *encoder) encode(v []byte) ([]byte, error) {
	return recfmt.Encode(e.format, v, &e.scratch)
}
