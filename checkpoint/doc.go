// Package checkpoint decides checkpoints: when one starts, when it is complete,
// when it has failed, and how a task with several inputs lines up barriers.
//
// It owns
//
//   - the Coordinator, a pure state machine in the style of etcd-io/raft:
//     events in (Step), actions out (Actions), nothing else;
//   - the Aligner, the same kind of state machine for one task's input
//     channels (Flink's barrier alignment and barrier tracking);
//   - the data that travels: Barrier, CancelMarker, and Metadata, the
//     completed checkpoint that is persisted and restored;
//   - in store/, the completed-checkpoint store (metadata format, atomic
//     writes, retention, file deletion).
//
// It does not start goroutines, read clocks, touch the disk or the network, or
// draw random numbers (Settings.Rand is injected). The runtime in pipeline/
// performs what this package decides: it carries barriers, runs snapshots,
// persists metadata through the store, commits offsets (source/) and
// transactions (sink/). Neither Coordinator nor Aligner is safe for concurrent
// use; each is owned by one goroutine.
//
// # Retention
//
// The Coordinator leaves retention to the store: it hands out every completed
// checkpoint as PersistMetadata and forgets it; the store keeps the last
// Settings.Retained and deletes the files no retained checkpoint references.
// The Coordinator's Discard action covers the other garbage, the files
// acknowledged for checkpoints that never completed (see Snapshot files).
//
// # The driver's duties
//
// The driver is the runtime goroutine that owns the Coordinator.
//
//  1. On start, load the newest completed checkpoint that verifies from the
//     store and the highest checkpoint id on disk; restore every task from
//     the checkpoint (and re-commit its sinks' committables, DESIGN step 8);
//     then NewCoordinator(settings, tasks, last, maxSeen). Every task of the
//     job is in tasks, sources and sinks included: each must acknowledge.
//  2. Feed every event through Step from this one goroutine, in the order it
//     learnt of them. An error from Step (ErrBadEvent) is a bug in the driver.
//  3. Tick: Step(Tick{time.Now()}) periodically, often compared to Interval
//     and Timeout (every 10-100ms). The first Tick starts the schedule; time
//     must not go backwards (time.Now carries a monotonic reading).
//  4. After every Step, take Actions() and perform them in the order given.
//     Start each before the next; a PersistMetadata may complete
//     asynchronously, its outcome comes back as an event (step 6).
//  5. TriggerSources(n, ts): tell every source task to record its position as
//     its snapshot for n and emit Barrier{n, ts} into all its outputs,
//     between two records.
//  6. PersistMetadata(md): write md through the store (durable, atomic), then
//     Step exactly one of MetadataPersisted(md.ID) or
//     MetadataPersistFailed(md.ID, err). At most one is outstanding.
//  7. NotifyComplete(n): only now tell every task that n is complete: sources
//     commit the offsets they recorded at barrier n, sinks commit every
//     committable they pre-committed up to barrier n. Commits are idempotent;
//     a commit that fails is a TaskFailed (the restart commits again).
//  8. Abort(n, reason): tell every task: Aligner.Abort(now, n), sources drop
//     what they recorded for n. Sinks keep what they pre-committed for n
//     pending: a later checkpoint records and commits it.
//  9. Discard(n, files): the files may be deleted, except those a retained
//     completed checkpoint references (see Snapshot files below; the
//     pipeline waits until a later checkpoint completed). Never touches
//     sink data.
//  10. FailJob(reason): stop every task and restart the job from step 1 with a
//     new Coordinator. Do not step this one again (it ignores everything).
//  11. Route each task's Ack (snapshot handle and Metrics) and Decline to
//     Step, and a failed task as TaskFailed.
//  12. To stop cleanly (SIGTERM), note Status().NextID, Step(TriggerNow{Now: now}),
//     and keep driving until Status().LastCompleted reaches that id: the
//     final checkpoint is then durable and committed. If it fails (none from
//     that id on pending, none completed), step TriggerNow again (at most
//     once a Tick): the next regular one may be due after the stop's bound.
//
// # A task's duties with an Aligner
//
// A task with input channels reads one element at a time, hands it to
// Aligner.Process with the current time, and performs the outputs in order:
// ProcessRecord, process it; SnapshotAndForward, take the synchronous
// snapshot, forward the barrier to every output, finish the snapshot
// asynchronously and Ack it (Decline if it fails); CancelAndForward, forward a
// CancelMarker and Decline with the reason; InputEnded, end its outputs. It
// should not read channels that are Blocked (then nothing is ever held back).
//
// Snapshot files: Discard lists the files acknowledged for a checkpoint that
// failed unless a retained completed checkpoint, or an ack already received
// for a pending one, lists them too. A runtime whose tasks list in a snapshot
// only files they wrote for that snapshot or files of checkpoints they were
// notified complete of (Flink's rule for incremental snapshots) may delete
// them at once. The pipeline's workers do not follow that rule (a changelog
// written for a failed checkpoint starts the next one's chain), but a file
// that leaves a worker's chain never comes back to it; so its driver deletes
// a discarded file once a later checkpoint completed without listing it.
package checkpoint
