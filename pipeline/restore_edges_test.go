package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
)

// restoreDo runs one harness command written as in a script (e.g.
// "deliver worker=0"), with input for produce, and returns its trace.
func restoreDo(t *testing.T, h *harness, line, input string) string {
	t.Helper()
	cmd, args, err := datadriven.ParseLine(line)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return h.handle(t, &datadriven.TestData{Pos: "review:" + line, Cmd: cmd, CmdArgs: args, Input: input})
}

// restoreStartAs is the harness's startAttempt with the job's config
// changed by mod first (another name, say): the same checkpoint.dir and
// state.dir, the same filesystem.
func restoreStartAs(h *harness, mod func(*config.Job)) error {
	cfg := h.config()
	mod(cfg)
	job := New(cfg, Options{FS: errorfs.Wrap(h.mem, h.faults), Log: zerolog.Nop()})
	job.spawn = func(f func()) { f() }
	job.rand = func() float64 { return 1 }
	a := &attempt{j: job}
	r, err := a.restore(h.ctx, nil)
	if err == nil {
		h.g, err = a.build(r)
	}
	if err != nil {
		a.close()
		return err
	}
	h.a, h.r, h.final = a, r, 0
	job.setRunning(r.source, h.g.driver)
	h.g.driver.observe = h.observe
	h.g.driver.clock = func() time.Time { return h.now }
	h.g.driver.step(h.ctx, checkpoint.Tick{Now: h.now})
	return nil
}

// TestRestoreAnotherJobsCheckpointIsNotRestored: the job's name is
// documented as "the checkpoint namespace" (config.yaml, config/job.go,
// DESIGN), and checkpoint.dir/state.dir default to ./data/checkpoints and
// ./data/state for every job. A job B started on the directories job A
// left (A stopped, same working directory, defaults) must not restore A's
// checkpoint: A's positions would make B skip every record A had read
// (never written to B's sink), A's dedup memory would drop B's records,
// and A's committables would be handed to B's sink.
func TestRestoreAnotherJobsCheckpointIsNotRestored(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	h.opts.dedup, h.opts.dedupKey = true, "id"
	if err := h.startAttempt(); err != nil {
		t.Fatal(err)
	}
	restoreDo(t, h, "produce partition=0", "a b")
	restoreDo(t, h, "read reader=0", "")
	restoreDo(t, h, "deliver worker=0", "")
	restoreDo(t, h, "trigger", "")
	restoreDo(t, h, "barrier reader=0", "")
	restoreDo(t, h, "deliver worker=0", "")
	out := restoreDo(t, h, "events", "")
	if !strings.Contains(out, "notify-complete 1") {
		t.Fatalf("checkpoint 1 of job harness did not complete:\n%s", out)
	}
	h.crash() // job "harness" is gone; its directories stay

	// Job "orders-audit", another job, on the same (default) directories.
	err := restoreStartAs(h, func(c *config.Job) { c.Name = "orders-audit" })
	if err == nil {
		t.Fatalf("job %q restored checkpoint %d written by job %q (positions %s, keyed state of its dedup): "+
			"it skips the records job harness read and dedups against its memory",
			"orders-audit", h.r.md.ID, "harness", h.r.source.Describe(h.r.positions))
	}
	if !permanent(err) || !strings.Contains(err.Error(), "checkpoint 1 in ") || !strings.Contains(err.Error(), "was taken by job harness, not orders-audit") {
		t.Errorf("start of another job on job harness's directories: %v; want a permanent refusal naming both jobs", err)
	}
}

// TestRestoreMaxParallelismChangeIsRefused: README, "Changing the
// parallelism": max_parallelism cannot change once a checkpoint holds
// keyed state; the job refuses to start. (Passes: a check of the fine
// path, which no trace covers.)
func TestRestoreMaxParallelismChangeIsRefused(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	h.opts.dedup, h.opts.dedupKey, h.opts.parallelism = true, "id", 2
	if err := h.startAttempt(); err != nil {
		t.Fatal(err)
	}
	restoreDo(t, h, "produce partition=0", "a b c d")
	restoreDo(t, h, "read reader=0", "")
	restoreDo(t, h, "deliver worker=0", "")
	restoreDo(t, h, "deliver worker=1", "")
	restoreDo(t, h, "trigger", "")
	restoreDo(t, h, "barrier reader=0", "")
	restoreDo(t, h, "barrier reader=1", "")
	restoreDo(t, h, "deliver worker=0", "")
	restoreDo(t, h, "deliver worker=1", "")
	if out := restoreDo(t, h, "events", ""); !strings.Contains(out, "notify-complete 1") {
		t.Fatalf("checkpoint 1 did not complete:\n%s", out)
	}
	h.opts.maxParallelism, h.opts.parallelism = 4, 3
	out := restoreDo(t, h, "restart", "")
	if !strings.Contains(out, "holds keyed state in 8 key groups, but pipeline.max_parallelism is 4") {
		t.Fatalf("restart with max_parallelism 8 -> 4: %s, want a refusal", out)
	}
}
