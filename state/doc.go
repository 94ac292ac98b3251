// Package state is a worker's keyed state: a Pebble database that one worker
// reads and writes, snapshots at a checkpoint barrier and restores after a
// restart, at the same parallelism or another.
//
// # What it owns, and what not
//
// The package owns the working copy of a worker's state (a directory it wipes
// and rebuilds on every Open), its snapshots (changelogs and full Pebble
// checkpoints, in files and directories the caller names) and restore (a
// private copy of a full snapshot, opened in the working directory, with
// the changelogs after it applied; or, after a change of parallelism, the
// worker's key groups gathered from the old workers' snapshots).
//
// It does not decide when to snapshot (the coordinator in package checkpoint
// does, and the worker calls Checkpoint when barrier n is aligned), does not
// record which checkpoint a snapshot belongs to, and never deletes a file it
// handed out: the completed-checkpoint store (checkpoint/store) deletes the
// files no retained checkpoint references. It does not route records or
// compute key groups (package keygroup has the formulas, the worker applies
// them) and does not check that a key belongs to the key group it is
// written under: the key group is the record's, the keys are the
// transforms'.
//
// # Key groups
//
// The state of a job is split into a fixed number of key groups, its max
// parallelism M (Config.MaxParallelism); each worker's Store owns a
// contiguous range of them (Config.KeyGroups, keygroup.RangeOf). Before
// running a record through the transforms, the worker calls
// SetKeyGroup(keygroup.Of(record key, M)); the transforms' Get, Set and
// Delete then read and write in that key group: every Pebble key is a tag
// byte, the transform's key, then the key group (2 bytes, big-endian), and
// the changelogs hold the key group and the key. The key group comes last
// so that keys written in order stay together in the database (keys.go has
// the measurements); a rescale therefore reads every key of a source to
// pick its key groups. Every full snapshot and changelog records M; a
// restore under another M is refused. Full snapshots of the earlier layout
// (key group first) are rewritten at restore.
//
// # Snapshots: chains
//
// A snapshot is a Chain: a full snapshot (a Pebble checkpoint: hard links
// to the sstables, copies of the MANIFEST and OPTIONS) and the changelogs
// written after it. The Store keeps every write it makes since the last
// barrier in a buffer, encoded as a changelog; at barrier n, Checkpoint sets
// that buffer aside (no I/O: the worker goes on at once) and Pending.Wait
// writes it to one file and syncs it, on another goroutine. A buffer that
// grows past a MiB is written and synced a MiB at a time as it grows, by a
// stream of its own under a temporary name, and not kept once written, so
// that Wait has only its tail to write and sync before it renames the file
// into place and a worker holds a few MiB of it whatever the interval
// (stream.go). A changelog that fails makes the next checkpoint a full
// snapshot. Once the
// changelogs since the last full snapshot reach Config.FullSnapshotAfter, a
// full snapshot is taken in the background and later chains start from it.
// So a checkpoint costs one file the size of what changed in the interval,
// whatever the size of the state, and a restore applies at most about
// FullSnapshotAfter of changelogs.
//
// # On-disk layout
//
//	<state.dir>/work/worker-2                  working copy, wiped by Open
//	<state.dir>/work/worker-2.rescale          scratch of a rescaled Open
//	<state.dir>/work/worker-2.changelog-<n>    a changelog being streamed, removed by Open
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
//  1. Open(Config{Dir, MaxParallelism, KeyGroups, Restore}) wipes Dir and
//     restores the sources in Restore (old workers' chains, each with the
//     key groups it owned) into it. One source with exactly the Store's key
//     groups (same parallelism): its full snapshot is copied into Dir (hard
//     links for .sst files, copies for the rest), Pebble opened there and
//     the changelogs applied in order; the restored chain is the one the
//     next Checkpoint extends. Otherwise (a rescale, see below) the Store
//     gathers its key groups from every source that holds some, and its
//     next Checkpoint takes a full snapshot, the base of a chain of its
//     own. Nothing restored from is modified, so it can be restored again.
//  2. The worker calls SetKeyGroup, then Get, Set and Delete, for each
//     record. Expire (an excise of a range from every key group, to free
//     the space of state no transform reads again) and Scan (a range of keys
//     of every key group) are not tied to a key group; Expire is not in
//     the changelogs, so a restore may bring expired keys back. The
//     files an excise leaves mostly dead (a table that straddled the
//     range) are compacted at a later barrier, on a goroutine of the
//     Store's (reclaim.go).
//  3. At barrier n the worker calls Checkpoint(fullDir, changelogPath) and
//     then, from any goroutine, the returned Pending's Wait, which returns
//     the Chain for checkpoint.Snapshot.Files. The next Checkpoint waits for
//     it. Snapshot(dir) takes a full snapshot synchronously.
//  4. Close releases the database (after a background full snapshot
//     ended). The working directory is left behind and wiped by the next
//     Open.
//
// # Rescaled restore
//
// When the parallelism changes, a worker's key groups come from one or
// several old workers' chains (a split, a merge, or both: Flink's ranges
// seldom align). Of the sources whose key groups meet the Store's, the one
// with a full snapshot holding the most of them is copied into Dir by hard
// links, and its keys of key groups outside the Store's range deleted.
// Each other source's full snapshot is hard-linked into a private scratch
// directory (Dir+".rescale", removed when Open returns), opened read-only,
// and the keys of the Store's key groups copied out of it. Every source's changelogs are then applied in order,
// each entry only if its key group is the Store's. Key groups are disjoint
// across sources, so within each one the result is that source's base and
// changelogs, the last write winning, deletes honoured. A Store whose key
// groups no source holds starts empty.
//
// # Concurrency
//
// A Store belongs to one goroutine, the worker that owns the state:
// SetKeyGroup, Get, Set, Delete, Expire, Scan, Checkpoint, Snapshot and
// Close must not be called concurrently with each other. Only a Pending's
// Wait and Metrics (for the job's metrics, until Close) may run on other
// goroutines, alongside them. Different Stores (different working
// directories) are independent.
//
// # Durability
//
// Writes are not durable on their own: Pebble's write-ahead log is off. A
// checkpoint is the unit of durability: when Wait returns, its changelog
// file and directory are synced. After a crash the working directory is
// discarded and the state is rebuilt from the last completed checkpoint's
// chain, while the source replays the records after it.
package state
