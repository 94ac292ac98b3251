package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ID identifies a checkpoint. IDs are handed out by the Coordinator in strictly
// increasing order, across restarts too: above the newest one with a file on
// disk, and within a process above every one triggered. (After the process
// restarts, the id of a checkpoint that failed leaving no file may come
// again, as in Flink without HA: nothing of it is committed anywhere.)
type ID uint64

// TaskID names one task of the job graph (for example "source", "worker-2",
// "sink-0"). It is stable across restarts of the same job config so that a
// restored checkpoint can be matched to its tasks.
type TaskID string

// Snapshot is what one task acknowledges for one checkpoint: everything the task
// needs to restore itself, plus the state files the snapshot references.
type Snapshot struct {
	// Data is opaque to this package: the source's offsets, a sink's
	// committables, a worker's state handle, encoded by the task itself.
	Data []byte `json:"data,omitempty"`
	// Files are state files (paths relative to the state root) this snapshot
	// references. The completed-checkpoint store keeps a file as long as one
	// retained checkpoint references it and deletes it after that.
	Files []string `json:"files,omitempty"`
}

// Metadata is a completed checkpoint: what is persisted before any task is told
// the checkpoint is complete, and what a restart restores from.
type Metadata struct {
	ID        ID                  `json:"id"`
	Timestamp time.Time           `json:"timestamp"`
	Tasks     map[TaskID]Snapshot `json:"tasks"`
	// Job is the name of the job that took it (the runtime sets it when
	// it persists the checkpoint; empty in checkpoints of versions
	// before it): a job restores only its own.
	Job string `json:"job,omitempty"`
}

// namePrefix starts every name of a checkpoint's files.
const namePrefix = "chk-"

// Name is the name a checkpoint's files go by, here and in the state
// directory: "chk-" and the id zero-padded to 20 digits (the width of the
// largest uint64), so that names sort like ids.
func (id ID) Name() string { return fmt.Sprintf("%s%020d", namePrefix, uint64(id)) }

// ParseName reads a name written by Name (and nothing else: no other
// padding, no sign); ok is false for any other name.
func ParseName(name string) (id ID, ok bool) {
	digits, found := strings.CutPrefix(name, namePrefix)
	if !found || len(digits) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return ID(n), true
}
