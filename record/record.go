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
}
