package record

import "time"

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record and where it came from. Transforms may replace
// Key and Value; the coordinates (Topic, Partition, Offset) stay those of the
// source record so a sink or a dead-letter entry can name its origin.
type Record struct {
	Topic     string
	Partition int32
	// KeyGroup is the key group the runtime put the record in (package
	// pipeline, by its key): which slice of keyed state it reads and
	// writes, and which worker handles it. Sources leave it zero.
	KeyGroup  uint16
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte
	Headers   []Header
	// KeyField is where the runtime found the value of pipeline.key_by's
	// field in Value (its JSON text, a string with its quotes), having
	// checked that Value is a JSON object; zero when it did not (no
	// key_by, no such field, null, not JSON). Valid only while Value is the
	// source's: a transform that replaces Value leaves it stale, so only a
	// dedup keyed by that field that no such transform precedes reads it
	// (transform.Chain.UseKeyField), instead of decoding Value again.
	KeyField Span
}

// Span is a part of a record's Value, by byte offsets: Value[Start:End].
type Span struct{ Start, End int32 }
