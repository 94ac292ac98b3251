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
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte
	Headers   []Header
}
