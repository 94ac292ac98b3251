package checkpoint

import (
	"fmt"
	"time"
)

// Barrier n travels with the records through every channel of the job graph:
// records before it belong to checkpoint n's state, records after it do not. A
// barrier never overtakes or reorders records.
type Barrier struct {
	ID        ID
	Timestamp time.Time // when the Coordinator triggered the checkpoint
	// Final marks the barrier of the job's last checkpoint (a stop was
	// requested; the sources emit no records after it): sinks that keep
	// output open across checkpoints close it off at this one.
	Final bool
}

// CancelMarker for n travels like a barrier, in its place, when a task gave up
// on checkpoint n: a task receiving it stops aligning n (Flink's
// CancelCheckpointMarker).
type CancelMarker struct {
	ID ID
}

// ElementKind says what an Element carries.
type ElementKind uint8

const (
	// RecordElement: Element.Record, of Element.Size bytes.
	RecordElement ElementKind = iota
	// BarrierElement: Element.Barrier.
	BarrierElement
	// CancelElement: Element.Cancel.
	CancelElement
	// EndOfChannel: the channel delivers nothing more.
	EndOfChannel

	abortElement // internal: Aligner.Abort, not on a channel
)

// Element is one thing read from an input channel.
type Element[R any] struct {
	Kind    ElementKind
	Record  R
	Size    int64 // the record's size in bytes, for held-back accounting
	Barrier Barrier
	Cancel  CancelMarker
}

// OutputKind says what an Output asks the task to do.
type OutputKind uint8

const (
	// ProcessRecord: process Output.Record (read from Output.Channel) now.
	ProcessRecord OutputKind = iota + 1
	// SnapshotAndForward: every live channel delivered Output.Barrier. Take
	// the snapshot's synchronous part, forward the barrier to every output,
	// then acknowledge it to the Coordinator with Output.Alignment.Duration
	// as the alignment metric. Outputs after it come after the barrier.
	SnapshotAndForward
	// CancelAndForward: this task gives up checkpoint Output.Barrier.ID for
	// Output.Reason. Forward CancelMarker{ID} to every output and decline
	// the checkpoint to the Coordinator with the reason (the Coordinator
	// ignores declines for checkpoints that already ended, and does not
	// count ErrSubsumed or ErrCancelled as failures).
	CancelAndForward
	// InputEnded: every input channel ended; nothing more will come.
	InputEnded
)

// Alignment is what an aligned checkpoint cost this task.
type Alignment struct {
	// Duration is from the first barrier to the last (the last live
	// channel's barrier, or the end of a channel that completed the
	// alignment), in the times the caller passed in.
	Duration time.Duration
	// StartDelay is from the barrier's Timestamp (its trigger) to its
	// first arrival at this task: how long it took the barrier to come
	// through the sources and the channels (records ahead of it, a busy
	// reader). 0 when the Timestamp is unset or later than that arrival.
	StartDelay time.Duration
	// HeldCount and HeldBytes are the input held back while aligning
	// (exactly-once only): elements, and the Size of held records.
	HeldCount int
	HeldBytes int64
}

// Output is one step the task must perform, in order.
type Output[R any] struct {
	Kind      OutputKind
	Channel   int       // ProcessRecord
	Record    R         // ProcessRecord
	Barrier   Barrier   // SnapshotAndForward; CancelAndForward (ID, and Timestamp when known)
	Reason    error     // CancelAndForward
	Alignment Alignment // SnapshotAndForward
}

func (k ElementKind) String() string {
	switch k {
	case RecordElement:
		return "record"
	case BarrierElement:
		return "barrier"
	case CancelElement:
		return "cancel"
	case EndOfChannel:
		return "end"
	case abortElement:
		return "abort"
	}
	return fmt.Sprintf("ElementKind(%d)", uint8(k))
}
