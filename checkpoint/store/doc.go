// Package store is the completed-checkpoint store: it makes checkpoint
// metadata durable, finds the newest restorable checkpoint after a restart,
// keeps the last R completed checkpoints and deletes the state files none of
// them references.
//
// # What it owns, and what not
//
// The store owns the durability of checkpoint metadata, retention, and the
// lifetime of state files once a completed checkpoint references them: a
// state file is deleted when, and only when, the last retained checkpoint
// that references it is dropped. Files shared by several checkpoints are
// reference-counted by path, never copied.
//
// It does not decide when a checkpoint is complete (the coordinator in
// package checkpoint does, and calls Save through the runtime); it does not
// write state files (tasks do) and does not know about pending checkpoints:
// a file that an in-flight checkpoint will reference must not be a file a
// dropped checkpoint was the last to reference, or Save may delete it first.
// Files of aborted checkpoints are the runtime's to discard, with Discard
// once a later checkpoint completed. The store never removes directories
// under the state root.
//
// # On-disk layout
//
//	<dir>/LOCK                                  held while a Store is open
//	<dir>/chk-00000000000000000042.meta         checkpoint 42, format in format.go
//	<dir>/chk-00000000000000000043.meta.tmp     a save in progress (removed by Open)
//	<stateRoot>/<path from Snapshot.Files>      state files, written by tasks
//
// Ids are zero-padded to 20 digits so names sort like ids. A metadata file
// is a header (magic "CONNCKPT", format version, body length, CRC-32C) and a
// JSON body holding checkpoint.Metadata; see format.go.
//
// # Write protocol
//
// Save(md) performs, in this order (Persist does steps 1-4 and Collect steps
// 5-7, for a caller that wants the clean-up after the checkpoint's commit):
//
//  1. Create <dir>/chk-<id>.meta.tmp and write the encoded metadata.
//  2. Fsync the temp file, then close it.
//  3. Rename it to <dir>/chk-<id>.meta.
//  4. Fsync <dir>. The checkpoint is now durable and Save will return nil;
//     a failure in steps 1-4 returns ErrNotDurable after removing the temp
//     (or renamed) file, best-effort, and leaves older checkpoints intact.
//  5. Choose what to drop: walking ids newest first, keep the first R whose
//     metadata verifies; drop every older metadata file.
//  6. Delete each state file referenced by a dropped checkpoint and by no
//     kept one, then fsync every directory it deleted from.
//  7. Remove the dropped metadata files, then fsync <dir>.
//
// A crash before step 4 completes restores the previous checkpoint (or,
// if the rename reached the disk, the new one, whose data was synced in
// step 2). A crash during steps 5-7 restores the new one; the dropped
// checkpoints whose metadata survived are dropped again by the next Save.
// Because state files are deleted before the metadata that lists them, no
// file is leaked, and a metadata file whose files are gone is older than
// R verified checkpoints and is never preferred. Failures in steps 5-7 are
// logged and retried by the next Save.
//
// # The caller's duties
//
//  1. Open the store once per process, call Close when done.
//  2. Before Save, make every state file the checkpoint references durable,
//     data and directory entry (Pebble's checkpoint does); the store does
//     not fsync state files.
//  3. Call Save only for a checkpoint the coordinator found complete, with
//     an id above MaxID. On ErrNotDurable, treat the checkpoint as failed:
//     notify no task of it.
//  4. Notify tasks that the checkpoint is complete only after Save returned
//     nil.
//  5. Never let a pending checkpoint reference a path that only dropped
//     checkpoints referenced (give each checkpoint its own hard links, as
//     Pebble does), and discard files of aborted checkpoints yourself.
//  6. On restart, hand out ids above MaxID, restore from LoadLatest (nil:
//     start without a checkpoint), and remove state files that no
//     checkpoint on disk references.
//
// # Shared storage
//
// With a Remote attached (AttachRemote, for checkpoint.storage), Persist
// first uploads the state files the checkpoint references that the remote
// lacks, then its metadata, and only then performs steps 1-4; a failure of
// either side is ErrNotDurable. At start, AttachRemote copies every
// checkpoint on the remote newer than the newest valid local one into the
// local directories (state files, then metadata), so LoadLatest restores
// the newest saved anywhere. Collect applies retention on the remote too.
// remote.go has the details.
//
// # Restart
//
// Open removes leftover temp files and records the highest id on disk
// (MaxID), valid or not, so the coordinator can continue above it.
// LoadLatest returns the newest checkpoint whose metadata verifies and
// whose state files all exist, logging a warning for each newer one it
// skips. Nothing is deleted on Open.
package store
