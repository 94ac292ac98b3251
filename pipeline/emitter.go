package pipeline

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/keygroup"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/source"
	"github.com/connector-dev/connector/transform"
)

// emitter is one source reader's output: a channel to every worker. It runs
// on the reader's goroutine. Records are split by key so that all records of
// one key reach the same worker, in order, or (byPartition) go whole to the
// worker of the reader's index; a barrier or cancellation marker goes to
// every channel.
type emitter struct {
	task    task
	outs    []chan element
	events  chan<- checkpoint.Event
	metrics *jobMetrics
	// byPartition (pipeline.route: partition) sends every batch whole to
	// the worker of the reader's index: no key group is computed (the
	// job keeps no keyed state), nothing is copied, and a partition's
	// records stay together and in order.
	byPartition bool
	maxKG       int                    // max parallelism: the number of key groups
	keyBy       *transform.FieldReader // pipeline.key_by's field; nil: the Kafka key
	// stopAt is the job's final checkpoint once a stop was requested (0
	// before), shared with the driver: barriers from it on are Final.
	stopAt *atomic.Uint64
	parts  []batch  // per-worker parts of the batch being split
	dest   []uint32 // scratch: the worker of each record of the batch
	counts []int    // scratch: records per worker
}

func newEmitter(task task, outs []chan element, events chan<- checkpoint.Event, m *jobMetrics, maxParallelism int, keyBy string, stopAt *atomic.Uint64) *emitter {
	e := &emitter{task: task, outs: outs, events: events, metrics: m, maxKG: maxParallelism, stopAt: stopAt,
		parts: make([]batch, len(outs)), counts: make([]int, len(outs))}
	if keyBy != "" {
		e.keyBy = transform.NewFieldReader(keyBy)
	}
	return e
}

var _ source.Emitter = (*emitter)(nil)

func (e *emitter) Records(ctx context.Context, b []record.Record) error {
	e.metrics.recordsIn.Add(float64(len(b)))
	if e.byPartition {
		return e.send(ctx, e.task.index, element{Kind: checkpoint.RecordElement, Record: b, Size: batchBytes(b)})
	}
	if len(e.outs) == 1 {
		for i := range b {
			b[i].KeyGroup = uint16(e.keyGroupOf(&b[i]))
		}
		return e.send(ctx, 0, element{Kind: checkpoint.RecordElement, Record: b, Size: batchBytes(b)})
	}
	// Two passes so each worker's part is allocated once, at its size.
	e.dest = e.dest[:0]
	clear(e.counts)
	for i := range b {
		kg := e.keyGroupOf(&b[i])
		b[i].KeyGroup = uint16(kg)
		w := keygroup.OperatorOf(kg, e.maxKG, len(e.outs))
		e.dest = append(e.dest, uint32(w))
		e.counts[w]++
	}
	for w, n := range e.counts {
		if n > 0 {
			e.parts[w] = record.NewBatch(n)
		}
	}
	for i, w := range e.dest {
		e.parts[w] = append(e.parts[w], b[i])
	}
	record.Release(b) // copied into the parts
	for w, p := range e.parts {
		if len(p) == 0 {
			continue
		}
		e.parts[w] = nil
		if err := e.send(ctx, w, element{Kind: checkpoint.RecordElement, Record: p, Size: batchBytes(p)}); err != nil {
			return err
		}
	}
	return nil
}

// keyGroupOf is a record's key group, which decides its worker (the one
// whose range holds it) and the slice of keyed state it uses: by the
// pipeline.key_by field of its value when set and the value has it (a
// string's decoded content, any other value's JSON text: the string "7" and
// the number 7 share a group), else by key, else by partition for records
// without a key (which keeps them in partition order). A value that is not
// JSON is routed by key: the transforms find it undecodable and apply the
// decode-error policy. The hash is fixed (package keygroup): keyed state
// restored after a restart, at any parallelism, meets the same keys in the
// same groups.
func (e *emitter) keyGroupOf(r *record.Record) int {
	r.KeyField = record.Span{}
	if e.keyBy != nil {
		if raw, found, err := e.keyBy.Raw(r); err == nil && found {
			// raw is a part of r.Value: where it starts follows from the
			// capacity left after it.
			start := cap(r.Value) - cap(raw)
			r.KeyField = record.Span{Start: int32(start), End: int32(start + len(raw))}
			return keygroup.Of(e.keyBy.Text(raw), e.maxKG)
		}
	}
	if len(r.Key) == 0 {
		return int(r.Partition) % e.maxKG
	}
	return keygroup.Of(r.Key, e.maxKG)
}

// Barrier acknowledges the reader's position as its snapshot, then sends
// the barrier on every channel. The ack may reach the coordinator before the
// barrier reaches the workers; that is fine, the checkpoint completes only
// when every task acked.
func (e *emitter) Barrier(ctx context.Context, id checkpoint.ID, ts time.Time, pos source.Position) error {
	if err := sendEvent(ctx, e.events, checkpoint.Ack{Task: e.task.ID(), ID: id, Snapshot: checkpoint.Snapshot{Data: pos}}); err != nil {
		return err
	}
	stopAt := checkpoint.ID(e.stopAt.Load())
	final := stopAt != 0 && id >= stopAt
	return e.all(ctx, element{Kind: checkpoint.BarrierElement, Barrier: checkpoint.Barrier{ID: id, Timestamp: ts, Final: final}})
}

func (e *emitter) Cancel(ctx context.Context, id checkpoint.ID) error {
	return e.all(ctx, element{Kind: checkpoint.CancelElement, Cancel: checkpoint.CancelMarker{ID: id}})
}

func (e *emitter) all(ctx context.Context, el element) error {
	for w := range e.outs {
		if err := e.send(ctx, w, el); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) send(ctx context.Context, w int, el element) error {
	select {
	case e.outs[w] <- el:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
