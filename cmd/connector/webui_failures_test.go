package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/httpapi"
	"github.com/connector-dev/connector/pipeline"
)

// TestWebPageShowsFailedCheckpointsAndWhyNotReady drives headless Chromium
// against the HTTP server answering a job that restarts after failed
// checkpoints (fixed answers, no job): the page shows the state, "not
// ready" with the reason, each failure with its reason in the list and the
// table, a red mark instead of a bar for it in the chart, and a bar for
// each completed checkpoint. A job that cannot tell its partitions (none
// listed) does not break it.
func TestWebPageShowsFailedCheckpointsAndWhyNotReady(t *testing.T) {
	chromium := needChromium(t)
	const why = "checkpoint 3 declined by worker 1: write state: no space left on device"
	t0 := time.Now().Add(-time.Minute).UTC()
	ended := func(ms int) *time.Time { at := t0.Add(time.Duration(ms) * time.Millisecond); return &at }
	status := pipeline.Status{
		NotReady: "checkpoints have failed since " + t0.Format(time.RFC3339) + " (last: " + why + ")",
		Live:     true,
		Counts:   pipeline.Counts{Completed: 2, Failed: 1},
		History: []pipeline.CheckpointRecord{
			{ID: 4, Status: "in_progress", TriggeredAt: t0.Add(3 * time.Second)},
			{ID: 3, Status: "failed", TriggeredAt: t0.Add(2 * time.Second), EndedAt: ended(2500), DurationMS: 500, Reason: why},
			{ID: 2, Status: "completed", TriggeredAt: t0.Add(time.Second), EndedAt: ended(1040), DurationMS: 40, AckedMS: 30, PersistMS: 6, CommitMS: 3},
			{ID: 1, Status: "completed", TriggeredAt: t0, EndedAt: ended(90), DurationMS: 90, AckedMS: 70, PersistMS: 12, CommitMS: 5, StateBytes: 4096},
		},
	}
	job := pipeline.JobInfo{Name: "orders", State: "restarting", At: time.Now().UTC(), StartedAt: t0, UptimeSeconds: 60, Restarts: 2}
	srv, err := httpapi.Start(httpapi.Config{
		Addr:        "127.0.0.1:0",
		Log:         zerolog.New(zerolog.NewTestWriter(t)),
		Checkpoints: func() (any, error) { return status, nil },
		Job:         func() (any, error) { return job, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })

	bctx, exceptions := newBrowser(t, chromium)
	err = chromedp.Do(bctx,
		chromedp.Navigate("http://"+srv.Addr()+"/"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#history tbody tr").length === 4`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the page did not list the 4 checkpoints: %v", err)
	}
	shown, err := chromedp.Run(bctx, chromedp.Evaluate[rendered](readPage))
	if err != nil {
		t.Fatal(err)
	}
	if shown.State != "restarting" || shown.Ready != "not ready" || shown.ReadyReason != status.NotReady {
		t.Errorf("the page shows state %q, readiness %q (%q); want restarting, not ready (%q)", shown.State, shown.Ready, shown.ReadyReason, status.NotReady)
	}
	if len(shown.Failures) != 1 || !strings.Contains(shown.Failures[0], "#3") || !strings.Contains(shown.Failures[0], why) {
		t.Errorf("failures listed: %q, want checkpoint 3 with its reason", shown.Failures)
	}
	if len(shown.Rows) != 4 || shown.Rows[1].Reason != why || shown.Rows[2].Reason != "" {
		t.Errorf("table rows %+v, want the reason beside checkpoint 3 only", shown.Rows)
	}
	slices.Sort(shown.Bars)
	if !slices.Equal(shown.Bars, []uint64{1, 2}) || !slices.Equal(shown.FailMarks, []uint64{3}) {
		t.Errorf("the chart has bars %v and failure marks %v, want bars 1 and 2 and a mark for 3", shown.Bars, shown.FailMarks)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", saveArtifact(t, "webui-failures.png", png))
	if len(shown.Violations) > 0 {
		t.Errorf("content security policy violations: %v", shown.Violations)
	}
	if e := exceptions(); len(e) > 0 {
		t.Errorf("the page threw: %v", e)
	}
}
