package source

import (
	"context"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
)

// Position is a reader's place in its input at a barrier, encoded by the
// source kind (Kafka: the next offset of every partition it owns). The
// runtime stores it in the checkpoint as it is and hands it back to the
// kind on restore and on commit; nothing else reads it.
type Position = []byte

// Source is one configured source of a job: its parallel readers, and what
// it does when a checkpoint completes.
//
// Lifecycle, as the runtime in package pipeline drives it:
//
//  1. The kind's Open (see Kind) resolves where every reader starts: the
//     restored checkpoint's positions (Env.Restored), else the kind's own
//     fallback (Kafka: the group's committed offsets, then start_offset).
//     It retries an unreachable system until ctx ends.
//  2. Readers() returns the readers; the runtime runs each Reader.Run on a
//     goroutine of its own, and Run on one more (background work such as
//     looking for new partitions), until it cancels their context.
//  3. After checkpoint n completes, Commit(positions of n) may be called
//     from a goroutine other than the readers' (Kafka: offsets committed to
//     the consumer group, so lag tools see progress). The checkpoint, not
//     the source's system, is the truth: a failed Commit is logged and the
//     next one repairs it. Commits may be skipped; they come in order.
//  4. Close, after every Run returned.
type Source interface {
	Readers() []Reader
	// Run does the source's background work until ctx is done (nil) or the
	// input changed in a way the job cannot go on with (an error: the job
	// restarts, and the restore decides; wrapped ErrPermanent: it stops).
	Run(ctx context.Context) error
	Commit(ctx context.Context, positions []Position) error
	// Describe writes positions for logs and /api/checkpoints.
	Describe(positions []Position) string
	Close()
}

// Reader is one source task: it reads its share of the input and hands
// records, barriers and cancellation markers to an Emitter, in order.
// Trigger, CancelBarrier and Suspend may be called from any goroutine and
// never block; Run from exactly one.
type Reader interface {
	// Run reads until ctx is done or an error occurs; it returns ctx's
	// error on a normal stop.
	Run(ctx context.Context, em Emitter) error
	// Trigger asks Run to take checkpoint id's snapshot (its Position) and
	// emit barrier id between the next two records.
	Trigger(id checkpoint.ID, ts time.Time)
	// CancelBarrier asks Run to send a cancellation marker for id.
	CancelBarrier(id checkpoint.ID)
	// Suspend asks Run to emit no more records once it has emitted the
	// barrier of checkpoint id or a later one: the job is stopping, and
	// id is its final checkpoint. Records read past it would be written
	// and rolled back (or, by a sink without transactions, written twice
	// after the restart). Barriers and cancellations still flow, so a
	// retried final checkpoint completes.
	Suspend(id checkpoint.ID)
}

// Emitter receives what a Reader reads, in order. Its methods are called from
// the Reader's Run goroutine only, and block while downstream is full
// (backpressure). A non-nil error stops Run.
type Emitter interface {
	// Records hands a batch downstream; the callee owns the slice afterwards.
	// It came from record.NewBatch: whoever handles its records last may
	// give it back with record.Release.
	Records(ctx context.Context, batch []record.Record) error
	// Barrier follows every record emitted before it and precedes every
	// record after it. pos is the reader's snapshot for checkpoint id:
	// where it resumes if the job restores checkpoint id.
	Barrier(ctx context.Context, id checkpoint.ID, ts time.Time, pos Position) error
	// Cancel tells downstream that checkpoint id was aborted.
	Cancel(ctx context.Context, id checkpoint.ID) error
}

// Partitioned is implemented by a Source whose readers each own a share of
// the input's partitions. Owned may be called after Open, before the
// readers run: it is how many partitions each reader owns (in Readers'
// order) at that time. With pipeline.route: auto, the runtime keeps records
// on their reader's worker only for a Partitioned source whose readers own
// as many each.
type Partitioned interface {
	Owned() []int
}

// Lagger is implemented by a Source that knows how far its readers are
// behind the end of their input, for the job's metrics. Lag may be called
// from any goroutine, concurrently with every other method, until Close.
type Lagger interface {
	Lag() []Lag
}

// Lag is how far a reader is behind the end of one partition of its input,
// as of the reader's last fetch of that partition.
type Lag struct {
	Topic     string
	Partition int32
	// Records is the partition's end offset (Kafka: the high watermark)
	// minus the reader's next offset, never below 0.
	Records int64
	// Next is the offset of the next record the reader reads; End the
	// partition's end offset (Kafka: the high watermark) as last seen.
	Next, End int64
}

// BatchSize is how many records a Reader hands to Records at once, at most
// (by default): the runtime sizes its channels in batches of it.
const BatchSize = 512
