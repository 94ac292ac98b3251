// Package state is a worker's keyed state: a Pebble database that one worker
// reads and writes, snapshots at a checkpoint barrier and restores after a
// restart.
//
// # What it owns, and what not
//
// The package owns the working copy of a worker's state (a directory it wipes
// and rebuilds on every Open), the synchronous part of a state snapshot (a
// Pebble checkpoint into a directory the caller names) and restore (a private
// copy of such a checkpoint, opened in the working directory).
//
// It does not decide when to snapshot (the coordinator in package checkpoint
// does, and the worker calls Snapshot when barrier n is aligned), does not
// record which checkpoint a snapshot belongs to, and never deletes a
// checkpoint directory: the completed-checkpoint store (checkpoint/store)
// deletes the files no retained checkpoint references, and the runtime
// removes the directory of a checkpoint that was aborted.
//
// # On-disk layout
//
//	<state.dir>/work/worker-2                   working copy, wiped by Open
//	<state.dir>/chk-<id>/worker-2              one Snapshot, never modified again
//
// The names are the runtime's choice; the package only needs both to be on
// the same filesystem, so that immutable files (.sst) are hard-linked rather
// than copied. A checkpoint directory is self-contained: it holds its own
// link to every file it needs, so deleting another checkpoint never breaks
// it, and consecutive checkpoints cost only the files written in between.
//
// # Lifecycle
//
//  1. Open(Config{Dir, RestoreFrom}) wipes Dir, copies the checkpoint
//     RestoreFrom into it (hard links for .sst files, copies for the MANIFEST,
//     OPTIONS, WAL and marker files) and opens Pebble there. The checkpoint
//     directory itself is only read, so it can be restored again.
//  2. The worker calls Get, Set and Delete while processing records.
//  3. At barrier n the worker calls Snapshot(dir): the write-ahead log is
//     synced and a Pebble checkpoint is made in dir, durably (see Snapshot).
//     The returned Handle lists the files for checkpoint.Snapshot.Files.
//  4. Close releases the database. The working directory is left behind and
//     wiped by the next Open.
//
// # Concurrency
//
// A Store belongs to one goroutine, the worker that owns the state. Get, Set,
// Delete, Snapshot and Close must not be called concurrently with each
// other; a snapshot is consistent because no write can interleave with it.
// Different Stores (different working directories) are independent.
//
// # Durability
//
// Writes are not durable on their own: they go to Pebble's write-ahead log
// without a sync. A checkpoint is the unit of durability; after a crash the
// working directory is discarded and the state is rebuilt from the last
// completed checkpoint, while the source replays the records after it.
package state
