package pipeline

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
)

// workerData is a worker's acknowledged snapshot: its sink's committables and
// its keyed state (a state.Chain, paths relative to the state root): State
// is the full snapshot ("" for none: a stateless pipeline, or state that
// began empty), Changelogs what changed after it.
type workerData struct {
	Committables []sink.Committable `json:"committables,omitempty"`
	State        string             `json:"state,omitempty"`
	Changelogs   []string           `json:"changelogs,omitempty"`
}

func (d workerData) encode() ([]byte, error) { return json.Marshal(d) }

func decodeWorkerData(b []byte) (workerData, error) {
	var d workerData
	if len(b) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("decode worker snapshot: %w", err)
	}
	return d, nil
}

// snapshotDir is where worker w puts a full snapshot of its state taken at
// checkpoint id, relative to the state root; snapshotDir + ".changelog" is
// where it puts the changelog of id.
func snapshotDir(id checkpoint.ID, w int) string {
	return path.Join(fmt.Sprintf("chk-%020d", id), fmt.Sprintf("worker-%d", w))
}

// stateChain is a worker's state to restore, relative to the state root.
type stateChain struct {
	base       string
	changelogs []string
}

// restored is what a job restores from a completed checkpoint.
type restored struct {
	id           checkpoint.ID
	offsets      source.Offsets
	committables []sink.Committable
	state        map[int]stateChain
	workers      int
}

// fromMetadata splits a checkpoint into what each part of the job restores.
// md may be nil (nothing to restore).
func fromMetadata(md *checkpoint.Metadata) (restored, error) {
	r := restored{offsets: source.Offsets{}, state: map[int]stateChain{}}
	if md == nil {
		return r, nil
	}
	r.id = md.ID
	tasks := make([]string, 0, len(md.Tasks))
	for t := range md.Tasks {
		tasks = append(tasks, string(t))
	}
	sort.Strings(tasks) // committables in a stable order
	for _, t := range tasks {
		snap := md.Tasks[checkpoint.TaskID(t)]
		switch id := checkpoint.TaskID(t); {
		case isSource(id):
			o, err := source.DecodeOffsets(snap.Data)
			if err != nil {
				return r, fmt.Errorf("checkpoint %d task %s: %w", md.ID, t, err)
			}
			r.offsets.Merge(o)
		case isWorker(id):
			d, err := decodeWorkerData(snap.Data)
			if err != nil {
				return r, fmt.Errorf("checkpoint %d task %s: %w", md.ID, t, err)
			}
			var w int
			if _, err := fmt.Sscanf(t, workerPrefix+"%d", &w); err != nil {
				return r, fmt.Errorf("checkpoint %d: bad task name %q", md.ID, t)
			}
			r.workers++
			r.committables = append(r.committables, d.Committables...)
			if d.State != "" || len(d.Changelogs) > 0 {
				r.state[w] = stateChain{base: d.State, changelogs: d.Changelogs}
			}
		}
	}
	return r, nil
}
