// Package file is the file sink (sink.type: file): exactly-once output as
// immutable part files in one directory, made visible by rename when a
// checkpoint completes.
//
// All files of a job live in one directory (Config.Path), named
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
// # Decision record and fencing
//
// The decision record of checkpoint n is its metadata in the checkpoint
// store (checkpoint/store): once it is durable, n's pending files are
// committed, by the commit that follows or, after a crash, by Recover on
// restart, which renames them again (a rename whose target exists is a
// no-op; a pending file never replaces a committed one). Before it is
// durable, nothing of n is visible and Recover deletes n's pending files,
// whose records the source replays. Fencing: one process per checkpoint
// directory (the store's lock), and file names carry the checkpoint id,
// so a commit can only name files its own checkpoint wrote.
package file
