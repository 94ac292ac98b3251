package sink

import "errors"

// Error classes. Every error a sink returns wraps one of these (and, for I/O
// failures, the filesystem's error too, so errors.Is(err, syscall.ENOSPC)
// works), so the runtime decides with errors.Is, never by matching strings.
var (
	// ErrBadRecord: Write cannot encode this record in the sink's format
	// (jsonl: an empty value, or a multi-line value that is not one valid
	// JSON document). Nothing of the record was written and the writer is
	// unaffected; the runtime applies its decode-error policy (fail, skip
	// and count, dead-letter).
	ErrBadRecord = errors.New("record not writable in sink format")
	// ErrNotDurable: output could not be made durable. From PreCommit it
	// declines the checkpoint; nothing is lost, the writer stays usable and
	// the next PreCommit retries and carries everything. From Write it means
	// I/O has failed for so long that the in-memory backlog hit its limit:
	// the task should fail (a restart rewinds the source).
	ErrNotDurable = errors.New("sink output not durable")
	// ErrCommitFailed: Commit could not finish (an I/O error). Some files may
	// be visible already. Commit is idempotent: calling it again with the
	// same committables finishes the job, and so does Recover on restart.
	ErrCommitFailed = errors.New("sink commit failed")
	// ErrCommitLost: a committable names output that is neither pending nor
	// committed. Pre-committed data is gone: data loss, never retried away.
	ErrCommitLost = errors.New("sink commit lost: pre-committed output missing")
	// ErrCommitConflict: committing would replace a committed file of
	// the same name, which only happens when checkpoint ids were reused
	// (the checkpoint dir was reset while the output was kept). Fatal: the
	// committed file is never overwritten.
	ErrCommitConflict = errors.New("sink commit would replace committed output")
	// ErrBadCommittable: a committable that this sink did not produce or
	// cannot decode (corrupt checkpoint metadata, another job's files).
	ErrBadCommittable = errors.New("bad sink committable")
	// ErrInvalidConfig: the sink's configuration is unusable, as New or
	// Recover found (a field, or what the configured system lacks: a
	// missing table or topic); the message names the key or the object.
	// No restart fixes it: the job stops and `connector run` exits 2.
	ErrInvalidConfig = errors.New("invalid sink config")
	// ErrClosed: a method was called on a closed writer. A bug in the caller.
	ErrClosed = errors.New("sink writer closed")
	// ErrLost: the writer lost output it cannot carry to a later
	// pre-commit (a transaction the broker refused); the task must fail so
	// that the job restarts from its last completed checkpoint and writes
	// it again.
	ErrLost = errors.New("sink output lost in flight")
	// ErrInUse: another process of the same job holds the sink's output
	// (the file sink's directory lock). Restarting does not help until it
	// stops.
	ErrInUse = errors.New("sink output held by another instance")
)
