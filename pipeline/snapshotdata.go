package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/keygroup"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
)

// workerData is a worker's acknowledged snapshot: its sink's committables,
// its dead-letter transactions' (DeadLetters: exactly_once dead letters,
// deadletter_txn.go; absent in checkpoints of versions before, and of jobs
// without them) and its keyed state (a state.Chain, paths relative to the
// state root): State is the full snapshot ("" for none: a stateless pipeline, or state that
// began empty), Changelogs what changed after it; KeyGroups the key groups
// the state holds, of MaxParallelism, keyed by KeyBy (pipeline.key_by; ""
// the Kafka key), and DedupKeys each dedup's key field by its name (absent
// in checkpoints of versions before). A checkpoint with keyed state but no
// MaxParallelism was written before key groups existed.
type workerData struct {
	Committables   []sink.Committable `json:"committables,omitempty"`
	DeadLetters    []sink.Committable `json:"dead_letter_committables,omitempty"`
	State          string             `json:"state,omitempty"`
	Changelogs     []string           `json:"changelogs,omitempty"`
	KeyGroups      *keygroup.Range    `json:"key_groups,omitempty"`
	MaxParallelism int                `json:"max_parallelism,omitempty"`
	KeyBy          string             `json:"key_by,omitempty"`
	DedupKeys      map[string]string  `json:"dedup_keys,omitempty"`
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

// stateChain is a worker's keyed state in a checkpoint, paths relative to
// the state root.
type stateChain struct {
	worker     int
	base       string
	changelogs []string
	keyGroups  keygroup.Range
}

// restored is what a job restores from a completed checkpoint.
type restored struct {
	id checkpoint.ID
	// positions are the source readers' positions, in reader order; nil
	// when there is no checkpoint to restore.
	positions    []source.Position
	committables []sink.Committable
	state        []stateChain // by worker, of those with keyed state
	workers      int
	// deadLetters are the dead-letter sink's committables (exactly_once
	// dead letters); none in a checkpoint written before them.
	deadLetters []sink.Committable
	// maxParallelism is the number of key groups the keyed state is split
	// into; 0 when the checkpoint holds none, or predates key groups.
	maxParallelism int
	// keyBy is what the keyed state's records were keyed by
	// (pipeline.key_by when it was written).
	keyBy string
	// dedupKeys is each dedup's key field, by name, when the state was
	// written; nil when the checkpoint does not say (versions before).
	dedupKeys map[string]string
	// legacyState: the checkpoint holds keyed state written before key
	// groups existed, which this version cannot place.
	legacyState bool
}

// fromMetadata splits a checkpoint into what each part of the job restores.
// md may be nil (nothing to restore).
func fromMetadata(md *checkpoint.Metadata) (restored, error) {
	var r restored
	if md == nil {
		return r, nil
	}
	r.id = md.ID
	tasks := make([]task, 0, len(md.Tasks))
	for id := range md.Tasks {
		t, err := parseTask(id)
		if err != nil {
			return r, fmt.Errorf("checkpoint %d: %w", md.ID, err)
		}
		tasks = append(tasks, t)
	}
	// Readers in order, then workers in order: committables in a stable order.
	slices.SortFunc(tasks, func(a, b task) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return a.index - b.index
	})
	r.positions = []source.Position{}
	for _, t := range tasks {
		snap := md.Tasks[t.ID()]
		switch t.kind {
		case sourceTask:
			r.positions = append(r.positions, snap.Data)
		case workerTask:
			d, err := decodeWorkerData(snap.Data)
			if err != nil {
				return r, fmt.Errorf("checkpoint %d task %s: %w", md.ID, t, err)
			}
			r.workers++
			r.committables = append(r.committables, d.Committables...)
			r.deadLetters = append(r.deadLetters, d.DeadLetters...)
			if err := r.addState(t.index, d); err != nil {
				return r, fmt.Errorf("checkpoint %d task %s: %w", md.ID, t, err)
			}
		}
	}
	return r, nil
}

// addState records worker w's keyed state, if it has any.
func (r *restored) addState(w int, d workerData) error {
	if d.State == "" && len(d.Changelogs) == 0 {
		return nil
	}
	if d.KeyGroups == nil || d.MaxParallelism == 0 {
		r.legacyState = true
		return nil
	}
	if r.maxParallelism != 0 && (r.maxParallelism != d.MaxParallelism || r.keyBy != d.KeyBy) {
		return fmt.Errorf("keyed state of %d key groups by %s beside state of %d by %s",
			d.MaxParallelism, keyByName(d.KeyBy), r.maxParallelism, keyByName(r.keyBy))
	}
	r.maxParallelism, r.keyBy = d.MaxParallelism, d.KeyBy
	if d.DedupKeys != nil {
		r.dedupKeys = d.DedupKeys
	}
	r.state = append(r.state, stateChain{worker: w, base: d.State, changelogs: d.Changelogs, keyGroups: *d.KeyGroups})
	return nil
}

// Committables returns the sink committables checkpoint md holds (what a
// restart from it commits), for tools that inspect a stopped job's sink.
func Committables(md *checkpoint.Metadata) ([]sink.Committable, error) {
	r, err := fromMetadata(md)
	return r.committables, err
}

// DeadLetterCommittables returns the dead-letter transactions' committables
// md's workers acknowledged (exactly_once dead letters, DeadLetterSink).
func DeadLetterCommittables(md *checkpoint.Metadata) ([]sink.Committable, error) {
	r, err := fromMetadata(md)
	return r.deadLetters, err
}

// keyByName names what pipeline.key_by value k keys records by, for errors.
func keyByName(k string) string {
	if k == "" {
		return "the Kafka key"
	}
	return fmt.Sprintf("field %q", k)
}
