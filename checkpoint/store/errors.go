package store

import "errors"

// Error classes. Every error the store returns wraps one of these (or an I/O
// error from the filesystem, wrapped with the operation and path), so callers
// decide with errors.Is, never by matching strings.
var (
	// ErrCorrupt: a metadata file does not verify (torn, truncated, bad
	// checksum, unknown format version, body that does not decode) or the
	// checkpoint it describes references a state file that is missing.
	// Such a checkpoint cannot be restored.
	ErrCorrupt = errors.New("checkpoint metadata corrupt")
	// ErrNotFound: no metadata file exists for the requested id.
	ErrNotFound = errors.New("checkpoint not found")
	// ErrNotDurable: Save could not make the metadata durable. The checkpoint
	// is not complete; the previously completed checkpoints are intact and the
	// store stays usable, so the caller treats this as a failed checkpoint and
	// may save a later one. The underlying I/O error is wrapped too (for
	// example errors.Is(err, syscall.ENOSPC)).
	ErrNotDurable = errors.New("checkpoint metadata not durable")
	// ErrInvalid: the caller passed metadata the store refuses (id not above
	// every id on disk, a state file path that is absolute or leaves the
	// state root). This is a bug in the caller.
	ErrInvalid = errors.New("invalid checkpoint metadata")
	// ErrLocked: another process holds the checkpoint directory or the
	// state root: another instance of the job runs on the same
	// directories. Retrying does not help until it stops.
	ErrLocked = errors.New("held by another instance")
)
