package pipeline

import (
	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/source"
)

// batch is the unit on a channel: consecutive records of one source reader
// bound for one worker. Batching keeps channel operations off the per-record
// path.
type batch = []record.Record

// element is what travels on a channel: a batch, a barrier, a cancellation
// marker or the end of the channel.
type element = checkpoint.Element[batch]

// batchRecords is the size of a full batch, for channel capacities.
const batchRecords = source.BatchSize

// channelCapacity turns the configured capacity in records into a capacity
// in batches of a channel, at least 2.
func channelCapacity(records, batchSize int) int {
	return max(2, records/max(1, batchSize))
}

func batchBytes(b batch) int64 {
	var n int64
	for i := range b {
		n += int64(len(b[i].Key) + len(b[i].Value))
	}
	return n
}
