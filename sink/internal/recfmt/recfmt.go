// Package recfmt is how the sinks that write record values into files or
// objects (sink/file, sink/s3) frame them: the formats jsonl and raw, with
// one encoding rule shared by both, so that a record refused by one is
// refused by the other.
package recfmt

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/connector-dev/connector/sink"
)

// Format names (the sinks' format key).
const (
	JSONL = "jsonl" // the record value, one per line
	Raw   = "raw"   // the record value's bytes as they are, no separator
)

// Encode returns the bytes of one record with value v in format, without
// its separator (Separator says which follows it).
//
// jsonl writes the value as it is. Values from Kafka are taken to be
// single-line JSON and are not validated (that would cost throughput). A
// value containing '\n' would break the line framing, so it is compacted
// with json.Compact (which removes every newline: JSON strings cannot hold
// a raw one); a value that is then not one valid JSON document, or an empty
// value, is refused with sink.ErrBadRecord.
//
// raw writes the value's bytes as they are; an empty value writes nothing.
//
// scratch holds a compacted value: the result may alias it or v, and is
// valid until the next call with the same scratch.
func Encode(format string, v []byte, scratch *bytes.Buffer) ([]byte, error) {
	if format == Raw {
		return v, nil
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: jsonl: empty value is not a JSON document", sink.ErrBadRecord)
	}
	if bytes.IndexByte(v, '\n') < 0 {
		return v, nil
	}
	scratch.Reset()
	if err := json.Compact(scratch, v); err != nil {
		return nil, fmt.Errorf("%w: jsonl: multi-line value is not one JSON document: %w", sink.ErrBadRecord, err)
	}
	return scratch.Bytes(), nil
}

// Separator reports whether format ends each record with '\n'.
func Separator(format string) bool { return format == JSONL }
