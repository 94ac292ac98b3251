package pipeline

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/connector-dev/connector/source"
)

// health is what /readyz reports: the job is ready when an attempt runs,
// its source hears from its system (source.HealthReporter), and
// checkpoints complete. Written by the attempt and the driver, read from
// any goroutine.
type health struct {
	running      atomic.Bool
	source       atomic.Value // source.Source of the running attempt
	failingSince atomic.Int64 // unix nanos of the first failed checkpoint since the last completed one; 0: none
	lastFailure  atomic.Value // string: why the last checkpoint failed
}

// setRunning records the running attempt's source (nil: none runs).
func (j *Job) setRunning(src source.Source, _ *driver) {
	if src != nil {
		j.health.source.Store(src)
	}
	j.health.failingSince.Store(0)
	j.health.running.Store(src != nil)
}

// checkpointFailed notes a failed checkpoint (driver).
func (h *health) checkpointFailed(reason error, now time.Time) {
	h.failingSince.CompareAndSwap(0, now.UnixNano())
	h.lastFailure.Store(reason.Error())
}

// checkpointCompleted clears the failures (driver).
func (h *health) checkpointCompleted() { h.failingSince.Store(0) }

// Ready returns nil when the job is ready, else why not: it is restoring or
// restarting, its source cannot reach its system, or checkpoints fail.
// Safe from any goroutine.
func (j *Job) Ready() error {
	h := &j.health
	if !h.running.Load() {
		return errors.New("not running: starting, restoring from a checkpoint, or restarting after a failure")
	}
	if hr, ok := h.source.Load().(source.HealthReporter); ok {
		if err := hr.Health(); err != nil {
			return fmt.Errorf("source: %w", err)
		}
	}
	if since := h.failingSince.Load(); since != 0 {
		why, _ := h.lastFailure.Load().(string)
		return fmt.Errorf("checkpoints have failed since %s (last: %s)", time.Unix(0, since).UTC().Format(time.RFC3339), why)
	}
	return nil
}
