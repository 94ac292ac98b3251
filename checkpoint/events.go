package checkpoint

import "time"

// Event is something that happened, fed to Coordinator.Step. The concrete
// types are Tick, TriggerNow, Ack, Decline, MetadataPersisted,
// MetadataPersistFailed and TaskFailed.
type Event interface {
	isEvent()
}

// Tick tells the Coordinator the time. It is the only way time enters the
// package: triggers and timeouts are decided on ticks, so the driver ticks
// often compared to Interval and Timeout (every 10-100ms is fine). Now must
// not go backwards; pass a monotonic reading (time.Now() carries one). The
// first Tick starts the schedule. A Tick expires what timed out, then triggers
// at most one checkpoint.
type Tick struct {
	Now time.Time
}

// Metrics are what a task measured while taking its snapshot, reported with
// its Ack and summed up in NotifyComplete.
type Metrics struct {
	// Bytes is the size of the snapshot's new state.
	Bytes int64
	// Sync is the synchronous part (flush, consistent view) during which
	// the task processed nothing.
	Sync time.Duration
	// Async is the asynchronous part (copying, uploading).
	Async time.Duration
	// Alignment is how long the task waited for barriers (Aligner's
	// Alignment.Duration).
	Alignment time.Duration
	// StartDelay is from the trigger to the first barrier's arrival at the
	// task (Aligner's Alignment.StartDelay).
	StartDelay time.Duration
}

// Ack is a task's acknowledgement of checkpoint ID with its snapshot.
type Ack struct {
	Task     TaskID
	ID       ID
	Snapshot Snapshot
	Metrics  Metrics
}

// Decline is a task saying it cannot snapshot checkpoint ID. Reason should wrap
// a class from this package when one applies (an Aligner's CancelAndForward
// reason does); it is wrapped with ErrDeclined in the resulting Abort.
type Decline struct {
	Task   TaskID
	ID     ID
	Reason error
}

// MetadataPersisted reports that PersistMetadata for ID is durable.
type MetadataPersisted struct {
	ID ID
}

// MetadataPersistFailed reports that PersistMetadata for ID failed. The
// checkpoint fails (it counts towards TolerableFailures); the job goes on.
type MetadataPersistFailed struct {
	ID  ID
	Err error
}

// TaskFailed reports that a task failed. Exactly-once allows no partial
// recovery, so the Coordinator fails the job: the runtime restarts it from the
// last completed checkpoint.
type TaskFailed struct {
	Task TaskID
	Err  error
}

// TriggerNow asks for a checkpoint as soon as MaxConcurrent allows, without
// waiting for the interval, the initial delay or the minimum pause: the
// final checkpoint of a job that is stopping. The trigger happens on this
// Step if the schedule has started and a slot is free, else on a later Tick
// or completion. Now, when set and later than the latest Tick, is the time
// of the request, which the checkpoint is triggered at (and its duration
// measured from) instead of the latest Tick's, up to a tick period earlier;
// later Ticks must not be before it.
type TriggerNow struct{ Now time.Time }

func (TriggerNow) isEvent()            {}
func (Tick) isEvent()                  {}
func (Ack) isEvent()                   {}
func (Decline) isEvent()               {}
func (MetadataPersisted) isEvent()     {}
func (MetadataPersistFailed) isEvent() {}
func (TaskFailed) isEvent()            {}
