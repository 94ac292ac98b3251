// Package sink owns getting records out of the job exactly once: the Sink and
// Writer interfaces with their two-phase-commit lifecycle, and their
// implementations (file, stdout; Kafka and PostgreSQL follow the same
// interface). A sink never reads Kafka and never decides when a checkpoint is
// complete: the runtime tells it.
//
// # File sink
//
// All files of a job live in one directory (FileConfig.Path), named
//
//	.inprogress.part-<job>-w<writer>-<seq>.<ext>   written, not pre-committed
//	.pending.part-<job>-w<writer>-<n>-<seq>.<ext>  pre-committed at barrier n
//	part-<job>-w<writer>-<n>-<seq>.<ext>           committed
//
// where ext is the format (jsonl or raw), seq numbers a writer's parts and n
// is the checkpoint whose PreCommit renamed the part to pending.
//
// Visibility rule: a name starting with '.' or '_' is not output; readers
// skip it. A visible part-* file is complete and immutable, and holds only
// records of completed checkpoints, each exactly once across all files.
//
// A part rolls (is fsynced and closed, still in progress) by size and age,
// independently of checkpoints. PreCommit(n) fsyncs the current part, renames
// every rolled part to its pending name and fsyncs the directory; the
// committable lists the committed names. Commit renames pending to committed
// and fsyncs the directory; a pending name that is gone while its committed
// name exists was committed before. Recover commits the restored checkpoint's
// files, then deletes every hidden file of its job (the job name in the file
// name tells; other jobs may share the directory).
//
// The stdout sink is at-least-once: see Stdout.
package sink
