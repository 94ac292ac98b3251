package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFetch is a Fetch response as the broker sent it: its record batches
// are bytes until Run decodes them (decode), one fetch at a time, so a
// fetch waiting behind the one being handed on costs its bytes only, not
// also ~150 bytes of kgo.Record for each record of it.
type rawFetch struct {
	resp   *kmsg.FetchResponse // its topics named (session.read)
	from   Offsets             // the offset each partition was fetched from
	ends   Offsets             // the offset after it, by the batches' headers (nextOffset)
	epochs Offsets             // the leader epoch of the batch each end follows, where known
	broker kgo.BrokerMetadata  // the leader that answered, for the hooks
	hooks  []kgo.HookFetchBatchRead
}

// size is how many offsets the fetch holds over the partitions it moves
// on (its records, and the control records and gaps among them), and the
// bytes of their batches.
func (rf *rawFetch) size() (offsets, bytes int64) {
	for _, rt := range rf.resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			end, moved := rf.ends.Lookup(rt.Topic, rp.Partition)
			from, asked := rf.from.Lookup(rt.Topic, rp.Partition)
			if moved && asked {
				offsets += end - from
				bytes += int64(len(rp.RecordBatches))
			}
		}
	}
	return offsets, bytes
}

// decompressor decodes compressed batches for every reader; franz-go's is
// safe for concurrent use.
var decompressor = kgo.DefaultDecompressor()

// decode decodes the fetch with franz-go's own decoder
// (kgo.ProcessFetchPartition: CRCs, compression, read_committed's aborted
// transactions and control batches, records before the fetched offset
// skipped) into record arrays lent by kgoRecordPool, and calls the client's
// fetch hooks (its metrics) for each batch.
func (rf *rawFetch) decode() kgo.Fetches {
	var f kgo.Fetch
	for _, rt := range rf.resp.Topics {
		name := rt.Topic
		ft := kgo.FetchTopic{Topic: name, TopicID: rt.TopicID}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			end, moved := rf.ends.Lookup(name, rp.Partition)
			from, asked := rf.from.Lookup(name, rp.Partition)
			if !moved || !asked {
				continue // not asked for, failed, or no whole batch
			}
			var batchRead func(kgo.FetchBatchMetrics)
			if len(rf.hooks) > 0 {
				batchRead = func(m kgo.FetchBatchMetrics) {
					for _, h := range rf.hooks {
						h.OnFetchBatchRead(rf.broker, name, rp.Partition, m)
					}
				}
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: from, IsolationLevel: kgo.ReadCommitted(),
				Topic: name, Partition: rp.Partition, Pools: []kgo.Pool{kgoRecordPool},
			}, rp, decompressor, batchRead)
			// The fetcher asks from the end the headers gave: records the
			// decoder stopped short of (a batch it could not read after
			// some it could) would be skipped. The fetch fails instead,
			// as franz-go's consumer fails on such a batch.
			if fp.Err == nil && next < end {
				fp.Err = fmt.Errorf("records %d to %d could not be decoded (a batch is damaged or was cut short)", next, end-1)
			}
			ft.Partitions = append(ft.Partitions, fp)
		}
		f.Topics = append(f.Topics, ft)
	}
	return kgo.Fetches{f}
}

// errDamaged is a fetched batch that cannot be read: no retry helps.
var errDamaged = errors.New("damaged record batch")

// nextOffset returns the offset to fetch partition rp from after this
// response, which was asked for it from offset from, and the leader epoch
// of the batch that offset follows (-1: unknown). It reads the record
// batches' headers (magic 2, the format Kafka writes since 0.11: first
// offset int64, length int32, partition leader epoch int32, magic int8,
// CRC int32, attributes int16, last offset delta int32) without decoding
// a record. A partial batch at the end (cut by the fetch's byte limit) is
// left for the next fetch, as the decoder leaves it. Older message sets,
// which a topic may still hold from before, are decoded to find their end
// (they have no epoch); one the decoder cannot read, or a batch too short
// for its header, is errDamaged.
func nextOffset(topic string, rp *kmsg.FetchResponseTopicPartition, from int64) (next int64, epoch int32, err error) {
	const (
		magicAt = 16 // the byte that says which format follows
		header  = 27 // a batch's header up to and including the last offset delta
	)
	next, epoch = from, -1
	for b := rp.RecordBatches; len(b) > magicAt; {
		length := int64(int32(binary.BigEndian.Uint32(b[8:]))) + 12
		if int64(len(b)) < length {
			break // cut short by the fetch's byte limit
		}
		if length <= magicAt || b[magicAt] == 2 && length < header {
			return from, -1, fmt.Errorf("%w: %d bytes at offset %d", errDamaged, length, int64(binary.BigEndian.Uint64(b)))
		}
		if b[magicAt] != 2 {
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: from, IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: rp.Partition,
			}, rp, decompressor, nil)
			if fp.Err != nil {
				return from, -1, fmt.Errorf("%w: %w", errDamaged, fp.Err)
			}
			return next, -1, nil
		}
		if end := int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1; end > next {
			next, epoch = end, int32(binary.BigEndian.Uint32(b[12:]))
		}
		b = b[length:]
	}
	return next, epoch, nil
}
