// Package pipeline is the runtime: it builds a job's task graph from its
// config, runs the tasks, drives the checkpoint Coordinator, and restarts the
// job from its last completed checkpoint when a task fails.
//
// The graph, for parallelism P:
//
//	source-0 ─┐                ┌─> worker-0: aligner -> transforms -> sink writer 0
//	source-1 ─┼─ shuffle by key┼─> worker-1: ...
//	...       ┘  (P×P channels)└─> worker-P-1
//
// Each source task is a source.Reader owning a share of the partitions; its
// emitter (emitter.go) splits every batch by record key into one bounded
// channel per worker, so every worker has P input channels and aligns
// barriers across them with a checkpoint.Aligner. Bounded channels give
// backpressure all the way to the Kafka fetch.
//
// Following a record: source.Reader.Run -> emitter.Records -> worker channel
// -> worker.run (Aligner: ProcessRecord) -> worker.process: transform.Chain,
// then sink.Writer.Write.
//
// Following barrier n: driver performs TriggerSources(n) -> Reader.Trigger ->
// emitter.Barrier (acks the source's offsets, sends n on every channel) ->
// worker.run (Aligner: SnapshotAndForward once n came on every channel) ->
// worker.snapshot: sink PreCommitAsync and state.Store.Checkpoint set aside
// what belongs to n; the worker goes on while other goroutines run the
// sink's finish and write the state's changelog (Pending.Wait), then send
// the Ack -> driver:
// PersistMetadata (store.Persist) -> NotifyComplete: sink Commit, writers
// Committed, source offsets committed to the group, then store.Collect
// (retention). The "checkpoint completed" log line splits its duration into
// these phases: acked (trigger to the last ack), persist, commit.
//
// Metrics: the job's families are defined in metrics.go and registered once
// per Job on Options.Registry. The data path updates counters where things
// happen; what an attempt's objects count (consumer lag, transform drops,
// sink bytes and files, Pebble) is read at scrape time from the objects the
// running attempt attached (metrics_attempt.go, metrics_state.go), and
// franz-go's client metrics come from hooks on every Kafka client. Attempts
// restart in process; nothing is registered again.
//
// It owns no decision about checkpoints (package checkpoint decides), no
// Kafka protocol (package source), no output format (package sink).
package pipeline
