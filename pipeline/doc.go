// Package pipeline is the runtime: it builds a job's task graph from its
// config, runs the tasks, drives the checkpoint Coordinator, and restarts the
// job from its last completed checkpoint when a task fails.
//
// The graph, for parallelism P:
//
//	source-0 ─┐                      ┌─> worker-0: aligner -> transforms -> sink writer 0
//	source-1 ─┼─ shuffle by key group┼─> worker-1: ...
//	...       ┘     (P×P channels)   └─> worker-P-1
//
// Sources, sinks and transforms are kinds registered by their own packages
// (source.Open, sink.New, transform.Build); the runtime holds their
// interfaces and never switches over kinds. Each source task is a
// source.Reader owning a share of the input; its emitter (emitter.go) puts
// every record in its key group (hash of its key mod
// pipeline.max_parallelism, the key being the pipeline.key_by field of its
// JSON value when set and present, else its Kafka key; records without
// either: their partition) and
// splits the batch into one bounded channel per worker, the worker whose
// key-group range holds the group (Flink's ranges, package
// internal/keygroup). So every worker has P input channels and aligns
// barriers across them with a checkpoint.Aligner, and keyed state is
// partitioned by key group: a restart at another parallelism gives each
// worker the key groups of its new range from the old workers' snapshots
// (restore.go, package state). Bounded channels give backpressure all the
// way to the source's fetch. A job without keyed state or key_by, whose
// readers own as many partitions each, skips the shuffle
// (pipeline.route, route.go): reader i's batches go whole to worker i, as
// Flink's forward connection; barriers still go on every channel, so the
// graph and the alignment are the same.
//
// An attempt (attempt.go) runs in three phases: restore (restore.go: the
// checkpoint store, the checkpoint, the sink's recovery, keyed state, the
// source at its positions), build (graph.go) and start. The deterministic
// harness (harness_test.go, testdata/runtime) runs the first two and then
// drives the workers' and the driver's steps itself, with no goroutine.
//
// Following a record: source.Reader.Run -> emitter.Records -> worker channel
// -> worker.run (Aligner: ProcessRecord) -> worker.process: transform.Chain,
// then sink.Writer.Write.
//
// Following barrier n: driver performs TriggerSources(n) -> Reader.Trigger ->
// emitter.Barrier (acks the reader's position, sends n on every channel) ->
// worker.run (Aligner: SnapshotAndForward once n came on every channel) ->
// worker.snapshot: sink PreCommitAsync and state.Store.Checkpoint set aside
// what belongs to n; the worker goes on while other goroutines run the
// sink's finish and write the state's changelog (Pending.Wait), then send
// the Ack -> driver:
// PersistMetadata (store.Persist) -> NotifyComplete: sink Commit, writers
// Committed, the source's positions committed (Kafka: to the group), then
// store.Collect (retention, and deleting what the state gave up). The "checkpoint completed" log line splits its duration into
// these phases: acked (trigger to the last ack), persist, commit.
//
// Bad records (badrecords.go) meet pipeline.on_decode_error. Dead letters
// are the one place the runtime names a kind: in exactly_once mode they go
// through a Kafka sink of their own on the dead-letter topic
// (deadletter_txn.go), one transactional writer per worker, pre-committed
// at each barrier beside the job's sink, committed after it at
// NotifyComplete and recovered beside it at restore; in at_least_once mode
// through an idempotent producer flushed at each barrier (deadletter.go).
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
// input protocol (package source and its kinds), no output format (package
// sink and its kinds), and deletes no file (the checkpoint store owns the
// state root's files).
package pipeline
