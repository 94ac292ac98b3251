package file

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/connector-dev/connector/sink"
)

// encoder turns a record value into the bytes of one record in a part.
//
// jsonl writes the value as it is, then '\n'. Values from Kafka are taken to
// be single-line JSON and are not validated (that would cost throughput). A
// value containing '\n' would break the line framing, so it is compacted with
// json.Compact (which removes every newline, JSON strings cannot hold a raw
// one); a value that is then not one valid JSON document, or an empty value,
// is refused with ErrBadRecord.
//
// raw writes the value's bytes as they are, with no separator.
type encoder struct {
	format  string
	scratch bytes.Buffer
}

func (e *encoder) encode(v []byte) ([]byte, error) {
	if e.format == FormatRaw {
		return v, nil
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: jsonl: empty value is not a JSON document", sink.ErrBadRecord)
	}
	if bytes.IndexByte(v, '\n') < 0 {
		return v, nil
	}
	e.scratch.Reset()
	if err := json.Compact(&e.scratch, v); err != nil {
		return nil, fmt.Errorf("%w: jsonl: multi-line value is not one JSON document: %w", sink.ErrBadRecord, err)
	}
	return e.scratch.Bytes(), nil
}
