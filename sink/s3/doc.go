// Package s3 is the S3 sink (sink.type: s3): exactly-once output as objects
// in an S3-compatible bucket. An object spans many checkpoints (large
// objects even with 1 s checkpoints) and becomes visible when it rolls
// and the checkpoint that recorded the roll completes.
//
// # Keys
//
//	<prefix><job>/[<bucket>/]part-<job>-<F>-w<writer>-<seq>.<ext>   an object (visible once completed)
//	<prefix>_connector/<job>/tails/<object name>/<n>                a delta: tail bytes pre-committed at n
//
// bucket is the record's key path by path_template (package
// sink/internal/pathtmpl: dt={yyyy-MM-dd}/hour={HH} from the record's
// Kafka timestamp in UTC, country={field:address.country} from its JSON
// value: Hive-style partitions for a data lake); none without one. F (12
// digits) is the first checkpoint whose records the object holds: its
// writer's last barrier + 1 when it opened the object; seq counts the
// objects the writer opened since that barrier, in any bucket, so the
// object name (the key's last part) is unique in the job and names its
// deltas alone; ext is the format (jsonl, raw or parquet: see Formats).
// Names sort by time within a bucket. A key is fixed when its object opens
// and recorded in every checkpoint until the object is complete, so a
// commit after a restart names the same key. After a restart new names
// start after the restored checkpoint (every writer's pre-commit records
// its barrier, even with nothing written) and after every visible object
// of the job.
//
// Visibility rule: the objects under <prefix><job>/ are the output; each is
// complete and immutable, and together they hold only records of completed
// checkpoints, each exactly once. Keys under <prefix>_connector/ are the
// sink's own; readers skip them. An object being written is an unfinished
// multipart upload of its final key, which S3 does not list as an object.
//
// # Writing and what a checkpoint records
//
// A writer keeps one open object per bucket (at most max_open_files; a
// record of a new bucket beyond it rolls the least recently written one),
// each a multipart upload. Records accumulate in memory, per object; each
// time part_size bytes are buffered they are handed to the writer's
// uploader goroutine as the next part (Write waits while one part is
// queued already): a writer holds up to max_open_files times part_size in
// buffers. An object rolls by roll_size, by roll_age (at a Write to it or
// a pre-commit), at every pre-commit with roll_on_checkpoint, and at the
// pre-commit after EndInput (the job's final checkpoint): its buffered
// bytes become its last part, which may be small.
//
// PreCommit(n) (asynchronous: sink.AsyncPreCommitter) queues barrier n
// behind the parts handed over; when the uploader reaches it, those parts
// are uploaded and each open object's bytes new since the last successful
// pre-commit are uploaded as a delta object (once an object's tail is in
// 16 deltas, the next holds the whole tail instead). The committable of n
// for the writer records (see committable.go):
//
//   - open_objects: each open object's key, upload id, token, open time
//     (roll_age after a restart), size, parts (number, ETag, size), the
//     deltas (key, offset, length) holding the bytes after the last part,
//     and its format's state (parquet: the row groups in those bytes, and
//     the schema);
//   - complete: each object that rolled since the last pre-commit: key,
//     upload id, token, size and all its parts.
//
// Checkpoints written before path_template recorded one open object as
// "open"; Recover still reads it. Decoding refuses keys that are not this
// job's writer's, in a bucket a template cannot make, and two open objects
// in one bucket.
//
// Committables of failed checkpoints are carried to the next pre-commit
// (their open states, superseded, dropped). Commit completes the objects
// to complete, each with CompleteMultipartUpload and If-None-Match: *,
// then deletes their deltas. Recover completes the restored ones the same
// way, resumes each writer's open objects from their recorded parts and
// deltas (parts uploaded after the checkpoint are overwritten by number; a
// complete names its parts by ETag, so a stray part is never included), or
// completes them if the job has fewer writers now or the format cannot go
// on (see Formats), and aborts every upload (listed under <prefix><job>/,
// buckets included) and deletes every delta of the job that the checkpoint
// does not need.
//
// # Formats
//
// format: jsonl (one record value per line) and raw (the values' bytes)
// write each record's bytes at once. format: parquet writes a Parquet file
// of the columns sink.parquet names (name, type, nullable, field: a dotted
// path into the JSON value; compression; row_group_size), as the file sink
// does (package sink/internal/filefmt): rows are buffered in memory and
// encoded as a row group once row_group_size of them (uncompressed) are
// buffered and at every pre-commit, so each checkpoint's size holds every
// row before its barrier, and the object's bytes grow a row group at a
// time; a part holds part_size bytes or more, less than twice part_size.
// roll_size counts the object's bytes and the rows buffered. The footer is
// written when the object rolls. A record that does not fit the columns is
// refused with sink.ErrBadRecord (pipeline.on_decode_error decides) and
// changes nothing. The committable records the row groups so far; after a
// restart the writer goes on from them. An open object no writer goes on
// with (its writer is gone, or the format or the parquet columns or
// compression changed since it was begun: filefmt.ErrSchemaChanged) is
// completed by Recover with the footer built from the recorded row groups
// appended after its tail, uploaded with it as its last part.
//
// # Decision record and fencing
//
// The decision record of checkpoint n is its metadata in the checkpoint
// store (checkpoint/store), as for the file sink. Once it is durable, the
// objects n recorded as rolled are committed: by the commit that follows
// or, after a crash, by Recover, which completes them again. Completing is
// idempotent: the key is looked at first, and an object there with the
// token (x-amz-meta-connector-token, set at CreateMultipartUpload with the
// job, writer and first checkpoint) and size recorded was committed
// before; a missing upload and no object is sink.ErrCommitLost; another
// object is sink.ErrCommitConflict. Before n is durable nothing of n is
// visible: its uploads stay unfinished, and a restart from an earlier
// checkpoint aborts the uploads begun after it and resumes the others from
// their recorded state (the bytes after it are replayed by the source).
//
// Fencing: one process per job (the checkpoint store's lock), and every
// completion carries If-None-Match: * on a deterministic key, so a second
// completion of a key, by a late retry or a stale process, can never
// replace or duplicate an object; a complete lists its parts by ETag, so a
// part a stale process overwrote fails it (InvalidPart) instead of
// slipping in.
//
// Recover never aborts an upload that a restored committable references.
// CommittedAfter(id) lists the visible objects whose F is after id, in
// every bucket (the keys of buckets that sort before "part-" in full, the
// rest from the first name after id on; no bucket starts with "part-");
// an object that spans id (F <= id, completed after id) is not listed, but
// Recover finds it (an object recorded open is visible, bigger) and
// refuses to restore id unless checkpoint.on_unrestorable is fall_back.
//
// # Bucket lifecycle
//
// Set a lifecycle rule on the bucket that aborts incomplete multipart
// uploads after N days (AbortIncompleteMultipartUpload,
// DaysAfterInitiation), for the uploads of a job that is never started
// again. An upload lives from its object's open until the checkpoint after
// its roll completes, and a restart resumes the uploads its checkpoint
// recorded; so N must exceed roll_age plus the age of the oldest
// checkpoint a restart may restore (the retained checkpoints, and however
// long a job may stay stopped before it is started again). If the rule
// aborts an upload a restored checkpoint records, Recover fails with
// sink.ErrCommitLost: those records are neither in S3 nor replayed by the
// source any more. With roll_age: 0 an object may stay open indefinitely
// and no such rule is safe. Deltas are ordinary objects, not touched by
// that rule; keep expiry rules off <prefix>_connector/.
//
// # Errors
//
// minio-go retries each request on transient errors (network, 5xx,
// SlowDown; up to 10 attempts). A part upload that still fails is kept
// and tried again at the next pre-commit; a failed pre-commit declines the
// checkpoint (sink.ErrNotDurable) and loses nothing. An upload that is gone
// (NoSuchUpload) fails the task (sink.ErrLost): its parts are gone, the job
// restarts from its last checkpoint. Write fails with ErrNotDurable once
// more than max(64 MiB, 4 part_size) wait for upload (the memory of a
// writer: that, the buffer of each open object, and with parquet up to
// row_group_size of rows each). Recover retries
// while S3 does not answer. New checks the bucket: a missing bucket or
// refused credentials is sink.ErrInvalidConfig, naming bucket and
// endpoint. Credentials: access_key_id and secret_access_key (never
// printed), else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN from the environment.
package s3
