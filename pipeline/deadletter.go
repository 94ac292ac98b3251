package pipeline

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkaclient"
)

// defaultDeadLetterLimit is the largest dead letter when its topic's
// max.message.bytes cannot be read (a topic to be created when first
// written, or no permission to describe it): franz-go's default batch
// limit, below the brokers' default message.max.bytes.
const defaultDeadLetterLimit = kafkaclient.DefaultMaxBatchBytes

// maxDeadLetterLimit caps a topic's max.message.bytes: a produce request
// holding such a batch stays well under franz-go's 100 MiB write limit.
const maxDeadLetterLimit = 64 << 20

// dialDeadLetter opens the dead-letter producer and reads the largest
// record its topic takes; the producer's batches are capped at it.
func dialDeadLetter(ctx context.Context, topic string, opts []kgo.Opt, log zerolog.Logger) (*kgo.Client, int, error) {
	var limit atomic.Int32
	limit.Store(defaultDeadLetterLimit)
	cl, err := kgo.NewClient(append(opts, kgo.ProducerBatchMaxBytesFn(func(string) int32 { return limit.Load() }))...)
	if err != nil {
		return nil, 0, err
	}
	n := deadLetterLimit(ctx, cl, topic, log)
	limit.Store(int32(n))
	return cl, n, nil
}

// deadLetterLimit reads the dead-letter topic's max.message.bytes, within
// 10 s; defaultDeadLetterLimit when it cannot.
func deadLetterLimit(ctx context.Context, cl *kgo.Client, topic string, log zerolog.Logger) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err == nil {
		var c kadm.ResourceConfig
		if c, err = rc.On(topic, nil); err == nil {
			err = c.Err
			for _, kv := range c.Configs {
				if kv.Key == "max.message.bytes" && kv.Value != nil {
					if n, perr := strconv.Atoi(*kv.Value); perr == nil && n > 0 {
						return min(n, maxDeadLetterLimit)
					}
				}
			}
		}
	}
	log.Info().Err(err).Str("topic", topic).Int("limit", defaultDeadLetterLimit).
		Msg("the dead-letter topic's max.message.bytes could not be read: dead letters are cut to the default limit")
	return defaultDeadLetterLimit
}

// fitDeadLetter cuts kr until it fits a topic taking records of up to limit
// bytes, and says what it cut ("" if nothing): first the value's end, then
// the key, then the record's own headers, then the error's text. Each cut
// leaves a header with the original size: connector.original.value_bytes,
// connector.original.key_bytes, connector.original.headers (their number).
// The origin headers (connector.source.*) are never cut: they name the
// record, whole in its source topic. A dead letter the broker would refuse
// failed the task at the next barrier, and the restart met the same record
// again: the policy never took it.
func fitDeadLetter(kr *kgo.Record, limit int) string {
	size := func() int { return kafkaclient.RecordBytes(kr) }
	if size() <= limit {
		return ""
	}
	var cut []string
	note := func(key string, n int) {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: key, Value: []byte(strconv.Itoa(n))})
		cut = append(cut, strings.TrimPrefix(key, "connector.original."))
	}
	if n := len(kr.Value); n > 0 {
		note("connector.original.value_bytes", n)
		kr.Value = kr.Value[:max(0, n-(size()-limit))]
	}
	if n := len(kr.Key); n > 0 && size() > limit {
		note("connector.original.key_bytes", n)
		kr.Key = kr.Key[:max(0, n-(size()-limit))]
	}
	if own := len(kr.Headers) - deadLetterHeaders - len(cut); own > 0 && size() > limit {
		// The record's own headers come first (deadLetter), whatever
		// their names (a dead letter read again has connector.* ones).
		kr.Headers = kr.Headers[own:]
		note("connector.original.headers", own)
	}
	if over := size() - limit; over > 0 {
		for i := range kr.Headers {
			if h := &kr.Headers[i]; h.Key == "connector.error" {
				h.Value = h.Value[:max(0, len(h.Value)-over)]
				cut = append(cut, "error")
			}
		}
	}
	return strings.Join(cut, ",")
}
