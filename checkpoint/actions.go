package checkpoint

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action is work the Coordinator hands to its driver. Actions come out of
// Coordinator.Actions in the order they must be performed; see the package
// documentation for what the driver does with each. The concrete types are
// TriggerSources, PersistMetadata, NotifyComplete, Abort, Discard and FailJob.
type Action interface {
	isAction()
	String() string
}

// TriggerSources starts checkpoint ID: every source task records its position
// and emits Barrier{ID, Timestamp} into all of its outputs, between two
// records.
type TriggerSources struct {
	ID        ID
	Timestamp time.Time
}

// PersistMetadata asks the driver to write Metadata durably and atomically
// through the completed-checkpoint store and to report the outcome as
// MetadataPersisted or MetadataPersistFailed. At most one is outstanding at a
// time. The Metadata's maps and slices are the driver's to keep.
type PersistMetadata struct {
	Metadata Metadata
}

// NotifyComplete tells every task that checkpoint ID is complete: sources
// commit the offsets they recorded for it, sinks commit every committable they
// pre-committed up to and including barrier ID. It is handed out only after
// MetadataPersisted(ID).
type NotifyComplete struct {
	ID ID
	// Timestamp is when the checkpoint was triggered; the driver's clock
	// minus Timestamp is the checkpoint's end-to-end duration.
	Timestamp time.Time
	// Totals sums Bytes over all tasks and takes the maximum of each
	// duration.
	Totals Metrics
}

// Abort tells every task that checkpoint ID will not complete: aligners stop
// aligning it (Aligner.Abort). Sinks keep what they pre-committed for it
// pending; a later completed checkpoint commits it.
type Abort struct {
	ID     ID
	Reason error
}

// Discard lists state files acknowledged for checkpoint ID, which will never
// complete. The driver hands them to the store, which deletes each file that no
// retained completed checkpoint references. It never concerns sink data: a
// sink's committables stay pending (see Abort).
type Discard struct {
	ID    ID
	Files []string
}

// FailJob: the job cannot go on. The driver stops every task and restarts the
// job from the last completed checkpoint (a new Coordinator). It is the last
// action the Coordinator ever hands out; pending checkpoints die with it.
type FailJob struct {
	Reason error
}

func (TriggerSources) isAction()  {}
func (PersistMetadata) isAction() {}
func (NotifyComplete) isAction()  {}
func (Abort) isAction()           {}
func (Discard) isAction()         {}
func (FailJob) isAction()         {}

func (a TriggerSources) String() string {
	return fmt.Sprintf("trigger %d at %s", a.ID, a.Timestamp.Format(time.RFC3339Nano))
}

func (a PersistMetadata) String() string {
	tasks := make([]string, 0, len(a.Metadata.Tasks))
	for t := range a.Metadata.Tasks {
		tasks = append(tasks, string(t))
	}
	slices.Sort(tasks)
	return fmt.Sprintf("persist %d tasks=[%s]", a.Metadata.ID, strings.Join(tasks, " "))
}

func (a NotifyComplete) String() string { return fmt.Sprintf("notify-complete %d", a.ID) }
func (a Abort) String() string          { return fmt.Sprintf("abort %d: %v", a.ID, a.Reason) }
func (a Discard) String() string {
	return fmt.Sprintf("discard %d files=[%s]", a.ID, strings.Join(a.Files, " "))
}
func (a FailJob) String() string { return fmt.Sprintf("fail-job: %v", a.Reason) }
