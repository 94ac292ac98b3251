package pipeline

import (
	"slices"
	"sync"
	"time"

	"github.com/connector-dev/connector/checkpoint"
)

// historyLen is how many checkpoints /api/checkpoints lists.
const historyLen = 100

// CheckpointRecord is one checkpoint in /api/checkpoints' history, as
// Flink's REST API lists them: in progress, completed or failed, with
// its phases once completed and its reason once failed. Durations are in
// milliseconds.
type CheckpointRecord struct {
	ID          uint64     `json:"id"`
	Status      string     `json:"status"` // in_progress, completed, failed
	TriggeredAt time.Time  `json:"triggered_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	DurationMS  float64    `json:"duration_ms,omitempty"`
	// Phases of a completed checkpoint: trigger to the last ack, the
	// metadata's persist, the sinks' commit; the slowest task's
	// synchronous and asynchronous snapshot parts and alignment, and the
	// latest first arrival of its barrier at a task after the trigger.
	AckedMS      float64 `json:"acked_ms,omitempty"`
	PersistMS    float64 `json:"persist_ms,omitempty"`
	CommitMS     float64 `json:"commit_ms,omitempty"`
	SyncMS       float64 `json:"sync_ms,omitempty"`
	AsyncMS      float64 `json:"async_ms,omitempty"`
	AlignmentMS  float64 `json:"alignment_ms,omitempty"`
	StartDelayMS float64 `json:"start_delay_ms,omitempty"`
	StateBytes   int64   `json:"state_bytes,omitempty"`
	Committables int     `json:"committables,omitempty"`
	Reason       string  `json:"reason,omitempty"` // why it failed
	// Slot is the slot whose job took it, in group mode (package group):
	// each slot's checkpoint ids are its own.
	Slot *int `json:"slot,omitempty"`
}

// Checkpoint statuses.
const (
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusFailed     = "failed"
)

// Counts are the checkpoints of the process's life, by outcome.
type Counts struct {
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// history keeps the last historyLen checkpoints; written by the driver,
// read by /api/checkpoints, from any goroutine.
type history struct {
	mu     sync.Mutex
	recs   []CheckpointRecord // oldest first
	counts Counts
	top    checkpoint.ID // the highest id triggered in this process
}

// maxTriggered is the highest checkpoint id triggered in this process: a
// restart's Coordinator goes on above it, so no id is used twice, even
// one that failed before any of its files was written.
func (h *history) maxTriggered() checkpoint.ID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.top
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (h *history) triggered(id checkpoint.ID, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.recs) == historyLen {
		h.recs = slices.Delete(h.recs, 0, 1)
	}
	h.recs = append(h.recs, CheckpointRecord{ID: uint64(id), Status: statusInProgress, TriggeredAt: at.UTC()})
	h.top = max(h.top, id)
}

// end updates checkpoint id's record (one triggered before this attempt,
// or pushed out of the window, gets one of its own).
func (h *history) end(id checkpoint.ID, at time.Time, fill func(*CheckpointRecord)) {
	h.endCounted(id, at, fill, true)
}

// endCounted is end; count false leaves the counts as they are (a
// checkpoint subsumed by a newer completion: no failure, as for its
// metric).
func (h *history) endCounted(id checkpoint.ID, at time.Time, fill func(*CheckpointRecord), count bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.recs, func(r CheckpointRecord) bool { return r.ID == uint64(id) })
	if i < 0 {
		if len(h.recs) == historyLen {
			h.recs = slices.Delete(h.recs, 0, 1)
		}
		h.recs = append(h.recs, CheckpointRecord{ID: uint64(id)})
		i = len(h.recs) - 1
	}
	r := &h.recs[i]
	at = at.UTC()
	r.EndedAt = &at
	if !r.TriggeredAt.IsZero() {
		r.DurationMS = ms(at.Sub(r.TriggeredAt))
	}
	fill(r)
	switch {
	case !count:
	case r.Status == statusCompleted:
		h.counts.Completed++
	default:
		h.counts.Failed++
	}
}

// endInProgress ends every record still in progress as failed for reason:
// the attempt that took them failed.
func (h *history) endInProgress(at time.Time, reason error) {
	h.mu.Lock()
	ids := []checkpoint.ID{}
	for _, r := range h.recs {
		if r.Status == statusInProgress {
			ids = append(ids, checkpoint.ID(r.ID))
		}
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.end(id, at, func(c *CheckpointRecord) { c.Status, c.Reason = statusFailed, reason.Error() })
	}
}

// snapshot returns the records newest first, and the counts.
func (h *history) snapshot() ([]CheckpointRecord, Counts) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.recs)
	slices.Reverse(out)
	return out, h.counts
}
