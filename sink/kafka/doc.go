// Package kafka is the Kafka sink (sink.type: kafka): every record exactly
// once in a topic, as a read_committed consumer sees it, across crashes,
// failed and timed-out checkpoints, broker restarts, and a transaction the
// broker aborted on timeout while the connector was down.
//
// # Transactions
//
// Each worker's writer produces into a Kafka transaction opened at its first
// record after a pre-commit. Pre-commit at barrier n closes it off (later
// records open the next one): it waits for every record's ack, adds the
// writer's progress marker for n (below) and hands the transaction to the
// sink, still open. When checkpoint n completes, Commit ends it (EndTxn).
// A checkpoint that fails leaves its transactions open; the next one to
// complete commits them, each writer's in checkpoint order. A checkpoint
// with nothing written opens no transaction: none is ever empty.
//
// Transactional ids are a bounded, stable set per job: <job>-w<writer>-t<slot>,
// slots 0 to tolerable_failures+max_concurrent+1, a slot reused once its
// transaction ended, plus <job>-w<writer>-r for producing a transaction
// again after a restart. They never grow with checkpoints.
//
// # Decision record
//
// Each writer's progress marker is the committed offset of a consumer group
// of its own (<job>.sink-progress.w<writer>, on partition 0 of the sink's
// topic): the id of the last checkpoint whose transaction it committed. It
// is written inside that transaction (TxnOffsetCommit), so it becomes
// visible exactly when the transaction's records do, or never: the
// transaction's commit is the decision record of the writer's output of n.
//
// # Restart
//
// The committables of a checkpoint name each transaction (its id, producer
// id and epoch) and where its records lie in the log. Recover aborts every
// open transaction of the job (initialising a transactional id aborts what
// it left open; so no transaction lingers after a crash, a cancel or a
// scale-down), then reads the markers (stable: none is pending any more),
// and for each transaction of
// the restored checkpoint that the markers show uncommitted (a crash
// between the checkpoint's metadata and its EndTxn, a crash between two
// writers' commits, or the broker's abort on timeout while the connector
// was down) it reads the transaction back from the log (read_uncommitted,
// filtered by producer id and epoch, with its end markers: an aborted
// transaction's records stay in the log). If the end marker says commit
// (the progress group expired or was deleted), nothing is done; if abort,
// the records are produced again in a new transaction with the same
// marker. Nothing depends on resuming a transaction before its timeout:
// data is lost only if the output topic's retention deleted the aborted
// records first, which Recover detects (it counts them) and refuses.
//
// A transaction can hang: the coordinator ended it, but its end marker
// never reached a partition it wrote (a broker restart during the commit
// left one here), so that partition's last stable offset stays at its
// first record and read_committed consumers wait for ever. Recover finds a
// restored transaction hanging when it reads it back to the log's end
// without the marker while the partition's leader still holds it open
// (DescribeProducers), and ends it there itself (WriteTxnMarkers, as
// kafka-transactions.sh abort does; it needs ClusterAction on the
// cluster): committed if a partition of it holds a commit marker, else
// aborted, and then produced again as above; the same marker goes to the
// progress group's partition of __consumer_offsets if the transaction
// hangs there too (hanging.go). A restored transaction the progress says
// committed is not read back: its partitions' leaders are asked whether it
// still hangs there, and it is committed where it does.
//
// The full design, with the crash table: docs/design/kafka-sink.md.
//
// # Fencing
//
// A second process of a job with directories of its own is refused at
// start once the job committed anything (the markers are ahead of its
// checkpoint dir). Every process of a job uses the same transactional ids,
// and Recover initialises every one of them the brokers know: a second
// process aborts the first's open transactions and fences its producers,
// idle slots' too (PRODUCER_FENCED), whose commits then fail; a fenced
// process fails and restarts, never committing output the other made. (A
// slot the first process never used is not fenced until the second uses
// it; a writer takes its slots round robin, so within its first few
// checkpoints. Until then, the checks below keep the two apart.) Two
// processes of one job on the same directories are refused by the
// checkpoint store's locks before that; on different directories the
// source notices the other through the group's commits.
package kafka
