package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/source"
)

// lagSource is a source.Source that reports a fixed lag (only Lag is used).
type lagSource struct {
	source.Source
	lag int64
}

func (s lagSource) Lag() []source.Lag {
	return []source.Lag{{Topic: "t", Partition: 0, Records: s.lag}}
}

// Live fails only when the job runs, no checkpoint completed for longer
// than the stall limit, and records wait: read since the last completed
// checkpoint, or behind in the input.
func TestLiveFailsOnlyWhenWedged(t *testing.T) {
	cfg := &config.Job{Name: "j"}
	cfg.Checkpoint.Interval, cfg.Checkpoint.Timeout = time.Second, 10*time.Second
	cfg.HTTP.StallIntervals = 20
	j := &Job{cfg: cfg}
	if got := j.stallLimit(); got != 20*time.Second {
		t.Fatalf("stall limit %v, want 20 intervals (20s)", got)
	}
	cfg.HTTP.StallIntervals = 3
	if got := j.stallLimit(); got != 11*time.Second {
		t.Fatalf("stall limit %v, want checkpoint.timeout + an interval (11s) when more than 3 intervals", got)
	}
	var read int64
	j.health.recordsIn = func() int64 { return read }
	stale := time.Now().Add(-time.Minute).UnixNano()
	for _, tc := range []struct {
		name    string
		running bool
		at      int64
		lag     int64
		read    int64
		stalled bool
	}{
		{"not running", false, stale, 5, 5, false},
		{"recent progress", true, time.Now().UnixNano(), 5, 5, false},
		{"stale, nothing waits", true, stale, 0, 0, false},
		{"stale, records behind", true, stale, 7, 0, true},
		{"stale, records read but not committed", true, stale, 0, 3, true},
	} {
		j.health.running.Store(tc.running)
		j.health.source.Store(source.Source(lagSource{lag: tc.lag}))
		j.health.progressAt.Store(tc.at)
		j.health.progressIn.Store(0)
		read = tc.read
		err := j.Live()
		if (err != nil) != tc.stalled {
			t.Errorf("%s: Live() = %v, want stalled %v", tc.name, err, tc.stalled)
		}
		if err != nil && !strings.Contains(err.Error(), "http.stall_intervals") {
			t.Errorf("%s: the reason does not name the key: %v", tc.name, err)
		}
	}
	cfg.HTTP.StallIntervals = 0
	if err := j.Live(); err != nil {
		t.Errorf("stall_intervals 0 must never fail: %v", err)
	}
}

// The history keeps the last historyLen checkpoints, newest first, with
// the outcome of each, and counts every outcome.
func TestHistoryKeepsTheLastCheckpoints(t *testing.T) {
	var h history
	t0 := time.Unix(1_700_000_000, 0)
	for id := 1; id <= historyLen+5; id++ {
		h.triggered(checkpoint.ID(id), t0.Add(time.Duration(id)*time.Second))
		end := t0.Add(time.Duration(id)*time.Second + 250*time.Millisecond)
		if id%10 == 0 {
			h.end(checkpoint.ID(id), end, func(c *CheckpointRecord) { c.Status, c.Reason = statusFailed, "expired" })
			continue
		}
		h.end(checkpoint.ID(id), end, func(c *CheckpointRecord) { c.Status = statusCompleted })
	}
	h.triggered(checkpoint.ID(historyLen+6), t0)
	recs, counts := h.snapshot()
	if len(recs) != historyLen || recs[0].ID != historyLen+6 || recs[0].Status != statusInProgress || recs[1].ID != historyLen+5 {
		t.Fatalf("history: %d records, first %+v", len(recs), recs[0])
	}
	if counts.Completed != historyLen+5-10 || counts.Failed != 10 {
		t.Errorf("counts %+v", counts)
	}
	for _, r := range recs[1:] {
		if r.DurationMS != 250 || r.EndedAt == nil || (r.Status == statusFailed) != (r.ID%10 == 0) || (r.Status == statusFailed && r.Reason != "expired") {
			t.Errorf("record %+v", r)
		}
	}
}
