package pipeline

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/connector-dev/connector/source"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
	progressAt   atomic.Int64 // unix nanos of the last completed checkpoint, or of the attempt's start
	progressIn   atomic.Int64 // records read (recordsIn) at progressAt
	recordsIn    func() int64 // records read so far (the job's counter)
}

// markProgress notes that output is committed up to now.
func (h *health) markProgress() {
	h.progressAt.Store(time.Now().UnixNano())
	if h.recordsIn != nil {
		h.progressIn.Store(h.recordsIn())
	}
}

// setRunning records the running attempt's source (nil: none runs).
func (j *Job) setRunning(src source.Source, _ *driver) {
	if src != nil {
		j.health.source.Store(src)
	}
	j.health.failingSince.Store(0)
	j.health.markProgress()
	j.health.running.Store(src != nil)
}

// checkpointFailed notes a failed checkpoint (driver).
func (h *health) checkpointFailed(reason error, now time.Time) {
	h.failingSince.CompareAndSwap(0, now.UnixNano())
	h.lastFailure.Store(reason.Error())
}

// checkpointCompleted clears the failures (driver).
func (h *health) checkpointCompleted() {
	h.failingSince.Store(0)
	h.markProgress()
}

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

// stallLimit is how long a running job may go without completing a
// checkpoint before /healthz fails: http.stall_intervals checkpoint
// intervals, and at least checkpoint.timeout plus an interval (a
// checkpoint may take that long before it fails); 0: never.
func (j *Job) stallLimit() time.Duration {
	n := j.cfg.HTTP.StallIntervals
	if n <= 0 {
		return 0
	}
	c := j.cfg.Checkpoint
	return max(time.Duration(n)*c.Interval, c.Timeout+c.Interval)
}

// Live returns nil unless the job is wedged: it runs, no checkpoint has
// completed for longer than the stall limit, and records wait for one
// (read since the last completed checkpoint, or behind in the input; a
// source that cannot tell its lag counts as waiting). Restoring and
// restarting are not stalls (readiness says so; restarts are bounded by
// restart.max_failures). Safe from any goroutine.
func (j *Job) Live() error {
	limit := j.stallLimit()
	h := &j.health
	if limit == 0 || !h.running.Load() {
		return nil
	}
	stalled := time.Since(time.Unix(0, h.progressAt.Load()))
	if stalled <= limit {
		return nil
	}
	// Waiting: read since the last completed checkpoint (their output is
	// not committed), or not read yet.
	waiting := int64(0)
	if h.recordsIn != nil {
		waiting = h.recordsIn() - h.progressIn.Load()
	}
	if l, ok := h.source.Load().(source.Lagger); ok {
		for _, p := range l.Lag() {
			waiting += max(p.Records, 0)
		}
	} else {
		waiting = max(waiting, 1) // cannot tell: count it as waiting
	}
	if waiting <= 0 {
		return nil
	}
	why, _ := h.lastFailure.Load().(string)
	if why == "" {
		why = "none failed: one is still pending, or none was triggered"
	}
	return fmt.Errorf("stalled: no checkpoint completed for %s (limit %s, http.stall_intervals) while %d records wait for one (read and not committed, or not read yet); last checkpoint failure: %s",
		stalled.Round(time.Millisecond), limit, waiting, why)
}

// counterValue reads a counter's value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
