// Package state is a worker's keyed state: a Pebble database that one worker
// reads and writes, snapshots at a checkpoint barrier and restores after a
// restart.
//
// # What it owns, and what not
//
// The package owns the working copy of a worker's state (a directory it wipes
// and rebuilds on every Open), its snapshots (changelogs and full Pebble
// checkpoints, in files and directories the caller names) and restore (a
// private copy of a full snapshot, opened in the working directory, with
// the changelogs after it applied).
//
// It does not decide when to snapshot (the coordinator in package checkpoint
// does, and the worker calls Checkpoint when barrier n is aligned), does not
// record which checkpoint a snapshot belongs to, and never deletes a file it
// handed out: the completed-checkpoint store (checkpoint/store) deletes the
// files no retained checkpoint references.
//
// # Snapshots: chains
//
// A snapshot is a Chain: a full snapshot (a Pebble checkpoint: hard links
// to the sstables, copies of the MANIFEST and OPTIONS) and the changelogs
// written after it. The Store keeps every write it makes since the last
// barrier in a buffer, encoded as a changelog; at barrier n, Checkpoint sets
// that buffer aside (no I/O: the worker goes on at once) and Pending.Wait
// writes it to one file and syncs it, on another goroutine. Once the
// changelogs since the last full snapshot reach Config.FullSnapshotAfter, a
// full snapshot is taken in the background and later chains start from it.
// So a checkpoint costs one file the size of what changed in the interval,
// whatever the size of the state, and a restore applies at most about
// FullSnapshotAfter of changelogs.
//
// # On-disk layout
//
//	<state.dir>/work/worker-2                  working copy, wiped by Open
//	<state.dir>/chk-<id>/worker-2              a full snapshot, never modified again
//	<state.dir>/chk-<id>/worker-2.changelog    the changelog of barrier id
//
// The names are the runtime's choice; the package only needs them to be on
// the working directory's filesystem, so that immutable files (.sst) are
// hard-linked rather than copied. Consecutive full snapshots cost only the
// sstables written in between.
//
// # Lifecycle
//
//  1. Open(Config{Dir, RestoreFrom, Changelogs}) wipes Dir, copies the full
//     snapshot RestoreFrom into it (hard links for .sst files, copies for
//     the rest), opens Pebble there and applies the changelogs in order.
//     Nothing restored from is modified, so it can be restored again; the
//     restored chain is the one the next Checkpoint extends.
//  2. The worker calls Get, Set and Delete while processing records.
//  3. At barrier n the worker calls Checkpoint(fullDir, changelogPath) and
//     then, from any goroutine, the returned Pending's Wait, which returns
//     the Chain for checkpoint.Snapshot.Files. The next Checkpoint waits for
//     it. Snapshot(dir) takes a full snapshot synchronously.
//  4. Close releases the database (after a background full snapshot
//     ended). The working directory is left behind and wiped by the next
//     Open.
//
// # Concurrency
//
// A Store belongs to one goroutine, the worker that owns the state: Get,
// Set, Delete, Checkpoint, Snapshot and Close must not be called
// concurrently with each other. Only a Pending's Wait and Metrics (for
// the job's metrics, until Close) may run on other goroutines, alongside
// them. Different Stores (different working directories) are independent.
//
// # Durability
//
// Writes are not durable on their own: Pebble's write-ahead log is off. A
// checkpoint is the unit of durability: when Wait returns, its changelog
// file and directory are synced. After a crash the working directory is
// discarded and the state is rebuilt from the last completed checkpoint's
// chain, while the source replays the records after it.
package state
