// Package kafka is the Kafka source (source.type: kafka, the default). It
// owns reading Kafka for a job: which partitions each reader
// owns, where each partition starts (the restored checkpoint, else the
// group's committed offset, else the configured start position), injecting
// checkpoint barriers between records, the offset snapshot taken at each
// barrier, and committing a completed checkpoint's offsets to the consumer
// group.
//
// It never decides when a checkpoint is triggered or complete: the runtime
// (package pipeline) tells a Reader to trigger and tells the Source to commit.
// A reader's position at a barrier (a source.Position) is its Offsets,
// encoded as JSON; a restore merges the positions of every reader of the
// checkpoint, so the job may restart with another parallelism.
//
// Partitions are assigned by the source itself, as Flink's KafkaSource does,
// not by the group protocol: the group is used only to store committed
// offsets, so a restart after SIGKILL never waits for a dead member's session
// to expire. Partition p of topic t (t at index i of the configured topics)
// belongs to reader (i+p) mod R, which keeps ownership stable when partitions
// are added while the job runs.
//
// The path of a record: a reader's fetchers (fetchers.go, fetchloop.go:
// source.fetches_in_flight of them, each with its own client over a share
// of the reader's partitions) send their own Fetch requests, one in flight
// to each leader, and keep each response as the broker sent it (fetchraw.go);
// Reader.Run takes whichever response comes first, decodes it with
// franz-go's decoder, updates the reader's positions to the offset after
// each record, and hands the records to its Emitter in batches; once the
// whole response is handed on, each partition's position moves to the
// offset after its batches (past transaction markers, aborted records and
// compacted offsets, where the Java consumer's position goes too). A
// partition is read by one fetcher for as long as the reader runs, so its
// records keep their order. The path of a barrier: the runtime calls
// Reader.Trigger(n); between two batches Run copies the positions (the
// snapshot of n) and calls Emitter.Barrier(n, positions), so the barrier
// follows every record emitted before it and precedes every record after
// it, whichever fetcher fetched them.
//
// Memory: a fetcher holds, for each leader, one response waiting for Run
// beside the one Run is handing on, and the waiting one as bytes only: it
// is decoded when Run takes it (franz-go's consumer decodes on arrival,
// which held each waiting fetch twice). A fetcher's fetches cover only its
// share of the partitions, so the memory per partition does not grow with
// the fetchers. fetch_max_partition_bytes bounds a partition's share of a
// fetch (the clients read a response of up to twice the larger fetch
// setting, from 100 MiB to 1 GiB: a larger one, a record batch larger
// than that, stops the job with errTooLarge, a source.ErrPermanent); a
// reader asks for less while its records are small, so a fetch holds
// about 5k records per partition at most (fetchsize.go): memory follows
// the records, speed the bytes. The decoder writes into record
// arrays lent by a pool (pool.go) that come back as soon as the records
// are copied into a batch; batches come from record.NewBatch and the
// worker that wrote them releases them.
//
// Metrics: the package has no metrics dependency. Source.Lag (a
// source.Lagger) reports each partition's high watermark minus its
// reader's next offset, from the readers' fetches and a listing of the
// watermarks at Open and every DiscoverInterval (lag.go); every client the
// source makes gets the hooks of Options.Hooks (the runtime's franz-go
// client metrics); Run feeds the fetch hooks of the client that fetched a
// response for each batch it decodes, and a fetcher gives a hook that is a
// BufferedFetchReporter the counts of the records and bytes its responses
// hold until Run takes them.
package kafka
