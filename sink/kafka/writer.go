package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/transform"
)

// maxProduceBytes is franz-go's default ProducerBatchMaxBytes: a record
// larger than a batch cannot be produced.
const maxProduceBytes = kafkaclient.DefaultMaxBatchBytes

// writer is one worker's producer: a transaction open from its first record
// after a pre-commit to the next pre-commit, then held until its checkpoint
// completes (the sink commits it) while the next one fills. Each
// transaction takes a free slot of the writer's transactional ids.
type writer struct {
	s     *Sink
	index int

	topicField, keyField *transform.FieldReader

	// Counted per writer (no shared cache line on the record path), read
	// by Stats.
	records, bytes atomic.Uint64

	mu       sync.Mutex // cur and slots are read by Stats and Committed
	cur      *txn
	clients  []*kgo.Client // by slot, made on first use
	busy     []bool        // slot holds an open transaction
	nextSlot int           // where freeSlot looks first
	carried  []sink.Committable
	holding  map[checkpoint.ID]int // slot of each carried segment
	closed   bool                  // Close ran: a second one does nothing
}

var (
	_ sink.Writer            = (*writer)(nil)
	_ sink.AsyncPreCommitter = (*writer)(nil)
)

func newWriter(s *Sink, index int) *writer {
	w := &writer{s: s, index: index, clients: make([]*kgo.Client, s.slots), busy: make([]bool, s.slots), holding: map[checkpoint.ID]int{}}
	if s.cfg.TopicField != "" {
		w.topicField = transform.NewFieldReader(s.cfg.TopicField)
	}
	if s.cfg.KeyField != "" {
		w.keyField = transform.NewFieldReader(s.cfg.KeyField)
	}
	return w
}

func (w *writer) current() *txn {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// begin opens a transaction in a free slot. The writer's lock is not held
// while the slot's client is made and its transaction begun (that may
// reach the broker, recovering a producer id), so Stats and Committed
// never wait on the network.
func (w *writer) begin() (*txn, error) {
	w.mu.Lock()
	slot := w.freeSlot()
	if slot < 0 {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: kafka sink writer %d: all %d transactional ids hold open transactions (more failed checkpoints in a row than checkpoint.tolerable_failures?)", sink.ErrLost, w.index, len(w.busy))
	}
	w.busy[slot] = true
	cl := w.clients[slot]
	w.mu.Unlock()
	fail := func(err error) (*txn, error) {
		w.mu.Lock()
		w.busy[slot] = false
		w.mu.Unlock()
		return nil, err
	}
	if cl == nil {
		var err error
		if cl, err = w.s.client(w.s.txnID(w.index, slot)); err != nil {
			return fail(fmt.Errorf("%w: kafka sink writer %d: %w", sink.ErrLost, w.index, err))
		}
		w.mu.Lock()
		w.clients[slot] = cl
		w.mu.Unlock()
	}
	if err := cl.BeginTransaction(); err != nil {
		if errors.Is(err, kerr.InvalidTransactionTimeout) {
			return fail(fmt.Errorf("kafka sink writer %d: %w (%w)", w.index, w.s.timeoutTooLong(0), err))
		}
		return fail(fmt.Errorf("%w: kafka sink writer %d: begin transaction: %w", sink.ErrLost, w.index, err))
	}
	t := &txn{id: w.s.txnID(w.index, slot), slot: slot, cl: cl, began: time.Now(), writer: w.index, ranges: map[topicPartition]*prange{}}
	w.mu.Lock()
	w.cur = t
	w.mu.Unlock()
	t.startAddGroup(w.s)
	return t, nil
}

// freeSlot picks the free slot after the last one taken, round robin
// (-1: none is free). The lowest free slot would be the one just committed,
// whose transaction the coordinator may still be completing (its markers
// being written): the new transaction's first requests would meet
// CONCURRENT_TRANSACTIONS and wait. Called with w.mu held.
func (w *writer) freeSlot() int {
	for i := range w.busy {
		slot := (w.nextSlot + i) % len(w.busy)
		if !w.busy[slot] {
			w.nextSlot = (slot + 1) % len(w.busy)
			return slot
		}
	}
	return -1
}

// Write produces r into the open transaction (opening one if none is).
// A record the topic cannot take (too large, a topic field that names no
// valid topic) is ErrBadRecord, before anything is produced.
func (w *writer) Write(ctx context.Context, r *record.Record) error {
	kr, err := w.record(ctx, r)
	if err != nil {
		return err
	}
	t := w.current()
	if t == nil {
		if t, err = w.begin(); err != nil {
			return err
		}
	}
	w.records.Add(1)
	w.bytes.Add(uint64(len(kr.Key) + len(kr.Value)))
	t.cl.Produce(ctx, kr, t.acked)
	return nil
}

// record builds the output record of r.
func (w *writer) record(ctx context.Context, r *record.Record) (*kgo.Record, error) {
	kr := newRecord()
	kr.Topic, kr.Key, kr.Value, kr.Timestamp = w.s.cfg.Topic, r.Key, r.Value, r.Timestamp
	if w.topicField != nil {
		topic, found, err := w.topicField.Get(r)
		if err != nil {
			return nil, fmt.Errorf("%w: topic_field: %w", sink.ErrBadRecord, err)
		}
		if found {
			if why := config.TopicProblem(string(topic)); why != "" {
				return nil, fmt.Errorf("%w: topic_field %s: %s", sink.ErrBadRecord, w.s.cfg.TopicField, why)
			}
			kr.Topic = string(topic)
		}
	}
	if w.keyField != nil {
		key, found, err := w.keyField.Get(r)
		if err != nil {
			return nil, fmt.Errorf("%w: key_field: %w", sink.ErrBadRecord, err)
		}
		kr.Key = nil
		if found {
			kr.Key = slices.Clone(key)
		}
	}
	if w.s.cfg.Partitioning == PartitionSameInput {
		kr.Partition = r.Partition
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	if w.s.cfg.OriginHeaders {
		kr.Headers = append(kr.Headers,
			kgo.RecordHeader{Key: "connector.source.topic", Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: "connector.source.partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
			kgo.RecordHeader{Key: "connector.source.offset", Value: []byte(strconv.FormatInt(r.Offset, 10))})
	}
	info, err := w.s.topic(ctx, kr.Topic)
	switch {
	case err != nil:
		return nil, fmt.Errorf("kafka sink: %w", err)
	case !info.exists:
		return nil, fmt.Errorf("%w: topic %s (from topic_field %s) does not exist", sink.ErrBadRecord, kr.Topic, w.s.cfg.TopicField)
	case w.s.cfg.Partitioning == PartitionSameInput && kr.Partition >= info.partitions:
		return nil, cfgkey.Wrap("sink.partitioning", fmt.Errorf("%w: partitioning same_as_input: a record of partition %d, and topic %s has %d partitions (it needs as many as the input)",
			sink.ErrInvalidConfig, kr.Partition, kr.Topic, info.partitions))
	}
	// A record must fit a batch of its own. Every header counts, the
	// origin headers too: a record over the limit only with them passed
	// here, the broker refused its batch, and the restart met it again,
	// forever, where its bad-record policy should have taken it.
	size := kafkaclient.RecordBytes(kr)
	if m := min(info.maxBytes, maxProduceBytes); m > 0 && size > m {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d the topic %s takes (max.message.bytes, or the producer's batch limit)", sink.ErrBadRecord, size, m, kr.Topic)
	}
	return kr, nil
}

// PreCommit is PreCommitAsync with its finish run at once.
func (w *writer) PreCommit(ctx context.Context, id checkpoint.ID) ([]sink.Committable, error) {
	finish, err := w.PreCommitAsync(ctx, id)
	if err != nil {
		return nil, err
	}
	return finish()
}

// PreCommitAsync closes off the open transaction: later records go to a
// new one. finish waits for every record's ack, puts the progress marker
// for id into the transaction and hands the transaction to the sink to
// commit; its committable joins those carried. A failure there loses the
// transaction's records (the broker refused them, or the transaction):
// ErrLost, the task fails and the restart writes them again.
func (w *writer) PreCommitAsync(ctx context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	w.mu.Lock()
	t := w.cur
	w.cur = nil
	w.mu.Unlock()
	if t == nil {
		return func() ([]sink.Committable, error) { return w.carriedCopy(), nil }, nil
	}
	return func() ([]sink.Committable, error) {
		c, err := w.seal(ctx, t, id)
		if err != nil {
			w.abandon(ctx, t)
			return nil, fmt.Errorf("%w: kafka sink writer %d, checkpoint %d, transaction %s: %w", sink.ErrLost, w.index, id, t.id, err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.carried = append(w.carried, c)
		w.holding[id] = t.slot
		return slices.Clone(w.carried), nil
	}, nil
}

// seal flushes t, marks it and registers it with the sink for Commit.
func (w *writer) seal(ctx context.Context, t *txn, id checkpoint.ID) (sink.Committable, error) {
	if err := t.cl.Flush(ctx); err != nil {
		return sink.Committable{}, err
	}
	crashpoint.Hit(crashpoint.AfterFlush)
	seg, err := t.segment()
	if err != nil {
		return sink.Committable{}, err
	}
	if err := w.s.addMarker(ctx, t, id); err != nil {
		return sink.Committable{}, err
	}
	c, err := encodeSegment(id, w.index, seg)
	if err != nil {
		return sink.Committable{}, err
	}
	w.s.mu.Lock()
	w.s.open[segmentKey(c)] = t
	w.s.mu.Unlock()
	return c, nil
}

// abandon aborts t (best effort) and frees its slot. A client whose abort
// failed (its producer fenced, the broker gone) may still think itself in
// the transaction: it is closed, and the slot's next transaction makes a
// new one (whose initialisation aborts whatever the broker still holds).
func (w *writer) abandon(ctx context.Context, t *txn) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := t.cl.AbortBufferedRecords(actx)
	if err == nil {
		err = t.cl.EndTransaction(actx, kgo.TryAbort)
	}
	if err == nil {
		w.s.stats.aborts.Add(1)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy[t.slot] = false
	if err != nil && w.clients[t.slot] == t.cl {
		w.clients[t.slot] = nil
		go t.cl.Close()
	}
}

func (w *writer) carriedCopy() []sink.Committable {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.carried)
}

// Committed frees the slots of the transactions of checkpoints <= id (the
// sink committed them).
func (w *writer) Committed(id checkpoint.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.carried = slices.DeleteFunc(w.carried, func(c sink.Committable) bool { return c.Checkpoint <= id })
	for n, slot := range w.holding {
		if n <= id {
			w.busy[slot] = false
			delete(w.holding, n)
		}
	}
}

// Close aborts the writer's open transactions (the one filling and those
// pre-committed for checkpoints that did not complete: a restart restores
// a completed checkpoint and produces what it needs again) and closes its
// clients, so that no transaction of the job lingers after a stop. A second
// Close does nothing.
func (w *writer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	clients, busy := w.clients, slices.Clone(w.busy)
	w.cur = nil
	w.mu.Unlock()
	var errs []error
	for slot, cl := range clients {
		if cl == nil {
			continue
		}
		if busy[slot] {
			_ = cl.AbortBufferedRecords(ctx)
			if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
				errs = append(errs, fmt.Errorf("abort %s: %w", w.s.txnID(w.index, slot), err))
			} else if err == nil {
				w.s.stats.aborts.Add(1)
			}
		}
		cl.Close()
	}
	w.s.mu.Lock()
	w.s.closed.records += w.records.Load()
	w.s.closed.bytes += w.bytes.Load()
	delete(w.s.writers, w.index)
	for k, t := range w.s.open {
		if t.writer == w.index {
			delete(w.s.open, k)
		}
	}
	w.s.mu.Unlock()
	return errors.Join(errs...)
}
