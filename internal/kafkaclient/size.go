package kafkaclient

import "github.com/twmb/franz-go/pkg/kgo"

// DefaultMaxBatchBytes is franz-go's default ProducerBatchMaxBytes: a
// record larger than a batch cannot be produced.
const DefaultMaxBatchBytes = 1_000_012

// The framing of a batch holding one record: the batch header (61 bytes)
// and the record's lengths, offsets and header count; and that of each
// header (its key's and value's lengths, varints of up to 5 bytes).
const (
	batchOverhead  = 61 + 40
	headerOverhead = 10
)

// RecordBytes bounds the bytes kr takes in a batch of its own, before
// compression: what a topic's max.message.bytes (and a producer's batch
// limit) is checked against. The broker checks the compressed batch, so
// the bound is on the safe side.
func RecordBytes(kr *kgo.Record) int {
	n := batchOverhead + len(kr.Key) + len(kr.Value)
	for _, h := range kr.Headers {
		n += headerOverhead + len(h.Key) + len(h.Value)
	}
	return n
}
