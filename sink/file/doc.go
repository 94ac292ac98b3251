// Package file is the file sink (sink.type: file): exactly-once output as
// immutable part files in one directory, made visible by rename when a
// checkpoint completes.
//
// All files of a job live in one directory (Config.Path), named
//
//	.inprogress.part-<job>-w<writer>-<F>-<seq>.<ext>   written, not committed
//	part-<job>-<C>-w<writer>-<i>.<ext>                 committed
//
// where ext is the format (jsonl or raw), F is one more than the last
// barrier the writer had passed when it opened the file and seq counts the
// files it opened since, C is the checkpoint whose pre-commit rolled the
// file and i numbers the files that pre-commit rolled. F and C have 12
// digits: committed names sort by the checkpoint that made them, by time.
//
// Visibility rule: a name starting with '.' or '_' is not output; readers
// skip it. A visible part-* file is complete and immutable, and holds only
// records of completed checkpoints, each exactly once across all files.
//
// Files span checkpoints: a writer's open file grows across checkpoints
// and rolls (is fsynced and closed, still hidden) by roll_size and
// roll_age, so files are large however often the job checkpoints. A
// pre-commit of n writes out and fsyncs the open file and records its
// durable size in n's committable (and the files rolled since the last
// pre-commit, by name), then fsyncs the directory if a new name is in it.
// Commit renames the rolled files into place and fsyncs the directory; a
// file whose committed name exists and whose in-progress name is gone was
// committed before. Recover commits the restored checkpoint's rolled files,
// cuts each restored open file back to its recorded size (bytes written
// after the checkpoint go; the source replays their records) and hands it
// to its writer, which goes on writing it (or commits it, for a writer the
// job no longer has after a rescale), then deletes every other hidden file
// of its job (the job name in the file name tells; other jobs may share
// the directory). The final checkpoint of a stop rolls every open file
// (sink.InputEnder), so a stopped job's output is all visible.
// roll_on_checkpoint: true rolls the open file at every pre-commit instead:
// output visible at every checkpoint, one file per checkpoint and writer.
//
// # Decision record and fencing
//
// The decision record of checkpoint n is its metadata in the checkpoint
// store (checkpoint/store): once it is durable, the files n rolled are
// committed, by the commit that follows or, after a crash, by Recover on
// restart, which renames them again (a rename whose target exists is a
// no-op; a rolled file never replaces a committed one), and the open files
// it recorded are resumed from their recorded sizes. Before it is durable,
// nothing of n is visible, and a restart from an earlier checkpoint deletes
// or cuts back n's files, whose records the source replays. Fencing: one process per checkpoint
// directory (the store's lock), and file names carry the checkpoint id,
// so a commit can only name files its own checkpoint wrote.
package file
