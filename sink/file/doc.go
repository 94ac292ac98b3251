// Package file is the file sink (sink.type: file): exactly-once output as
// immutable part files under one directory, made visible by rename when a
// checkpoint completes.
//
// The files of a job live in its directory (Config.Path) or, with a
// path_template, in bucket directories under it, named
//
//	[<bucket>/].inprogress.part-<job>-w<writer>-<F>-<seq>.<ext>   written, not committed
//	[<bucket>/]part-<job>-<C>-w<writer>-<i>.<ext>                 committed
//
// where bucket is the record's directory by path_template (package
// sink/internal/pathtmpl: dt={yyyy-MM-dd}/hour={HH} from the record's
// Kafka timestamp in UTC, country={field:address.country} from its JSON
// value, Hive-style partitions for a data lake), ext is the format (jsonl,
// raw or parquet), F is one more than the last barrier the writer had
// passed when it opened the file and seq counts the files it opened since
// (in any bucket), C is the checkpoint whose pre-commit rolled the file and
// i numbers the files that pre-commit rolled. F and C have 12 digits:
// committed names sort by the checkpoint that made them, by time. A file
// is renamed within its bucket: its committed path is the bucket and its
// committed name.
//
// Visibility rule: a name starting with '.' or '_' is not output; readers
// skip it (pathtmpl refuses a bucket that would start so). A visible part-*
// file is complete and immutable, and holds only records of completed
// checkpoints, each exactly once across all files, in the bucket of its
// records.
//
// Files span checkpoints: a writer keeps one open file per bucket (at most
// max_open_files; a record of a new bucket beyond it rolls the least
// recently written one), which grows across checkpoints and rolls (is
// fsynced and closed, still hidden) by roll_size and roll_age, so files
// are large however often the job checkpoints. A bucket directory is
// created with fsutil.MkdirAll before its first file, so its entry in each
// parent is durable. A pre-commit of n writes out and fsyncs every open
// file and records their durable sizes in n's committable (and the files
// rolled since the last pre-commit, by path), then fsyncs each directory
// a new name is in. A write that fails (a full disk) declines the
// pre-commit and stays buffered for the next; a file's fsync that fails
// is sink.ErrLost: after a write-back error the kernel may drop the pages
// and a later fsync succeeds, so the task fails and the restart writes the
// output after the restored checkpoint again. Commit renames the rolled files into place and fsyncs
// Config.Path and each directory it renamed in; a file whose committed
// name exists and whose in-progress name is gone was committed before.
// Recover commits the restored checkpoint's rolled files, cuts each
// restored open file back to its recorded size (bytes written after the
// checkpoint go; the source replays their records) and hands it to its
// writer, which goes on writing it (or commits it, for a writer the job no
// longer has after a rescale), then deletes every other hidden file of its
// job in Config.Path and every directory under it (the job name in the
// file name tells; other jobs may share the directories). CommittedAfter
// walks the directories the same way. The final checkpoint of a stop rolls
// every open file (sink.InputEnder), so a stopped job's output is all
// visible. roll_on_checkpoint: true rolls the open files at every
// pre-commit instead: output visible at every checkpoint, one file per
// checkpoint, writer and bucket.
//
// # The page cache
//
// On Linux a new part is written with direct I/O (O_DIRECT; direct.go):
// in chunks of at least 1 MiB of whole 4 KiB blocks, from the part's
// buffer straight to the disk, one chunk in flight on its own goroutine
// while the writer fills the next. A pre-commit writes the partial last
// block through the page cache and keeps it buffered; the next chunk
// writes it again, whole, with the same bytes. The sink never reads its
// output back; a reader of just-committed files reads them from disk.
//
// Where direct I/O is refused (tmpfs before Linux 6.6, other systems) and
// for a part resumed after a restart, the bytes go through the page cache
// in 256 KiB writes; every 4 MiB the sink asks Linux to start writing them
// to disk (sync_file_range), so a pre-commit's fsync has little left to
// do, and it drops the pages 16 MiB behind that point from the page cache,
// and all of a file's once it is durable (posix_fadvise DONTNEED;
// part.go). Either way the sink's writes do not grow the page cache (and
// evict other processes' pages), which costs CPU on every write.
//
// # What a checkpoint records
//
// A writer's committable of n (names.go, fileCommittable) holds, as paths
// relative to Config.Path:
//
//   - rolled: each file rolled since the last pre-commit, in-progress
//     path and committed path (in the same bucket);
//   - open_files: each open file, its path, durable size, open time and
//     format state (parquet: the row groups so far).
//
// Checkpoints written before path_template recorded one open file as
// "open"; Recover still reads it. Decoding refuses a path outside
// Config.Path, in a directory a template cannot make, or not of this job.
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
