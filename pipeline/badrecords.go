package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// badRecords applies the configured policy to a record that cannot be
// decoded or written: fail the job, skip it (counted and logged), or send
// it to a dead-letter topic. It is shared by the workers.
//
// Dead letters are exactly once with checkpoint.mode exactly_once: each
// worker writes them into a transaction of its own, committed when the
// checkpoint covering their records completes (deadletter_txn.go). With
// at_least_once they are produced by an idempotent producer and flushed at
// every barrier before the worker acknowledges, so a completed checkpoint
// never covers a record that is in neither the sink nor the dead-letter
// topic, but a restart may send one again.
type badRecords struct {
	policy  config.DecodeErrorPolicy
	topic   string
	dlq     *kgo.Client // dead_letter with at_least_once only; shared by the workers
	limit   int         // dead_letter only: the largest record its topic takes (deadletter.go)
	metrics *jobMetrics
	log     zerolog.Logger

	mu      sync.Mutex
	failure error // first dead-letter produce error since the last flush

	skipped, cut logBurst // their warnings, bounded
}

const (
	msgSkipped = "skipping a record that cannot be processed"
	msgCut     = "a dead letter over its topic's max.message.bytes is cut to fit it: the record is whole in its source topic, at the offset its headers name"
)

// errFatal marks errors that fail the task instead of declining a
// checkpoint: the source does not rewind while the job runs, so a record
// that could not be dead-lettered is only recovered by a restart.
var errFatal = errors.New("task cannot go on")

// handle returns nil when the record was dealt with, or the error that fails
// the task. txn is the worker's transactional dead-letter writer
// (exactly_once), nil for the shared idempotent producer.
func (b *badRecords) handle(ctx context.Context, txn sink.Writer, r *record.Record, cause error) error {
	switch b.policy {
	case config.DecodeSkip:
		b.metrics.badSkipped.Inc()
		if b.skipped.allow(b.log, place{r.Topic, r.Partition, r.Offset}) {
			b.log.Warn().Err(cause).Str("topic", r.Topic).Int32("partition", r.Partition).Int64("offset", r.Offset).Msg(msgSkipped)
		}
		return nil
	case config.DecodeDeadLetter:
		b.metrics.badDeadLettered.Inc()
		kr := deadLetter(b.topic, r, cause)
		if cut := fitDeadLetter(kr, b.limit); cut != "" && b.cut.allow(b.log, place{r.Topic, r.Partition, r.Offset}) {
			b.log.Warn().Str("topic", r.Topic).Int32("partition", r.Partition).Int64("offset", r.Offset).Int("limit", b.limit).Str("cut", cut).Msg(msgCut)
		}
		if txn != nil {
			return produceTxn(ctx, txn, kr)
		}
		b.dlq.Produce(ctx, kr, func(_ *kgo.Record, err error) {
			if err != nil {
				b.mu.Lock()
				b.failure = cmp.Or(b.failure, err)
				b.mu.Unlock()
			}
		})
		return nil
	default:
		return fmt.Errorf("record %s/%d@%d: %w (on_decode_error.policy is fail)", r.Topic, r.Partition, r.Offset, cause)
	}
}

// flush waits until every dead-letter record the idempotent producer
// (at_least_once) produced so far is acknowledged, and sums up the
// warnings a burst of bad records left unlogged.
func (b *badRecords) flush(ctx context.Context) error {
	b.skipped.tick(b.log)
	b.cut.tick(b.log)
	if b.dlq == nil {
		return nil
	}
	if err := b.dlq.Flush(ctx); err != nil {
		return fmt.Errorf("flush dead-letter topic %s: %w", b.topic, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.failure; err != nil {
		return fmt.Errorf("%w: produce to dead-letter topic %s: %w", errFatal, b.topic, err)
	}
	return nil
}

// deadLetterHeaders is how many headers deadLetter adds after the
// record's own.
const deadLetterHeaders = 4

// deadLetter is the record as it came from Kafka, with headers naming where
// it came from and why it was rejected (deadLetterHeaders of them, after
// the record's own).
func deadLetter(topic string, r *record.Record, cause error) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	kr.Headers = append(kr.Headers,
		kgo.RecordHeader{Key: "connector.error", Value: []byte(cause.Error())},
		kgo.RecordHeader{Key: "connector.source.topic", Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: "connector.source.partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
		kgo.RecordHeader{Key: "connector.source.offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
	)
	return kr
}
