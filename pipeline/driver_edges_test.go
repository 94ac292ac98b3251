package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/connector-dev/connector/checkpoint"
)

// drvRun runs harness commands (one per line; a line "  | text" is
// input for the command before it) and returns the whole trace.
func drvRun(t *testing.T, h *harness, script string) string {
	t.Helper()
	var out strings.Builder
	lines := strings.Split(strings.TrimSpace(script), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		cmd, args, err := datadriven.ParseLine(l)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		var input []string
		for i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|") {
			i++
			input = append(input, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "|")))
		}
		d := &datadriven.TestData{Pos: "drv:" + l, Cmd: cmd, CmdArgs: args, Input: strings.Join(input, "\n")}
		out.WriteString("> " + l + "\n")
		out.WriteString(h.handle(t, d))
	}
	return out.String()
}

// TestAnAbortOfANewerCheckpointLeavesNoOlderOneInProgress: the
// Coordinator's Abort(2) gave up worker-0's healthy alignment of 1 as
// "subsumed", and a subsumed checkpoint's history record was never ended:
// /api/checkpoints listed it in_progress forever. Now 1 aligns and
// completes, and a checkpoint subsumed by a newer completion ends in the
// history (failed, with its reason; no failure metric).
func TestAnAbortOfANewerCheckpointLeavesNoOlderOneInProgress(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	trace := drvRun(t, h, `
job parallelism=2 max-concurrent=2
start
produce partition=0
  | c
produce partition=1
  | a
read reader=0
read reader=1
trigger
barrier reader=0
deliver worker=0 channel=0
trigger
barrier reader=1
deliver worker=1 n=3
fail-precommit worker=1
barrier reader=0
barrier reader=1
deliver worker=1
events
deliver worker=0
events
status
`)
	st := h.a.j.Status()
	for _, r := range st.History {
		if r.Status == statusInProgress && !drvContainsID(h.g.driver.coord.Status().Pending, checkpoint.ID(r.ID)) {
			t.Errorf("checkpoint %d is no longer pending but /api/checkpoints shows it %s (ended_at %v)\ntrace:\n%s",
				r.ID, r.Status, r.EndedAt, trace)
		}
	}
}

// TestCheckpointsPendingWhenTheJobFailsEndInTheHistory: FailJob drops the
// pending checkpoints without an Abort, and their history records stayed
// in_progress for the rest of the process's life (the Job's history
// outlives the attempt). They end as failed, with the job's reason.
func TestCheckpointsPendingWhenTheJobFailsEndInTheHistory(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	trace := drvRun(t, h, `
job parallelism=1 max-concurrent=2 tolerable=0
start
produce partition=0
  | a
read reader=0
trigger
trigger
barrier reader=0
fail-precommit worker=0
deliver worker=0
events
`)
	if h.g.driver.failed == nil {
		t.Fatalf("expected the job to fail\n%s", trace)
	}
	st := h.a.j.Status()
	for _, r := range st.History {
		if r.Status == statusInProgress {
			t.Errorf("checkpoint %d: the attempt failed, yet /api/checkpoints shows it %s\ntrace:\n%s", r.ID, r.Status, trace)
		}
	}
}

// TestCheckpointIDsAreNotReusedByTheNextAttempt: a checkpoint that was
// triggered and failed without leaving a file (a stateless job) is
// invisible to store.MaxID, so the next attempt of the same process (the
// job restarting after a failure) handed its id out again, and the Job's
// history, which outlives the attempt, held two checkpoints of that id.
func TestCheckpointIDsAreNotReusedByTheNextAttempt(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	trace := drvRun(t, h, `
job parallelism=1
start
produce partition=0
  | a
read reader=0
trigger
barrier reader=0
fail-precommit worker=0
deliver worker=0
events
`)
	j := h.a.j
	h.a.close() // as Run does after a failed attempt, before the next one
	h.a, h.r, h.g = nil, nil, nil
	a := &attempt{j: j}
	defer a.close()
	r, err := a.restore(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.build(r)
	if err != nil {
		t.Fatal(err)
	}
	if next := g.driver.coord.Status().NextID; next <= 1 {
		t.Errorf("the next attempt hands out checkpoint id %d again\ntrace:\n%s", next, trace)
	}
}

// TestAFailedFinalCheckpointIsTakenAgainWhileStopping: on SIGTERM the driver
// asked for one forced checkpoint. If it failed (one transient decline),
// nothing asked again: the next was due a full interval later, and the
// stop gives up checkpoint.timeout after the request. With interval >=
// timeout the stop failed (errFinalCheckpoint, a non-zero exit) though
// every task was healthy again. The driver now takes another.
func TestAFailedFinalCheckpointIsTakenAgainWhileStopping(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	// harness job: interval 1h, timeout 1m.
	trace := drvRun(t, h, `
job parallelism=1 timeout=1m
start
produce partition=0
  | a
read reader=0
stop
fail-precommit worker=0
barrier reader=0
deliver worker=0
events
tick 1s
tick 30s
tick 59s
`)
	// The loop's deadline is stop time + checkpoint.timeout (1m): by 59s a
	// retried final checkpoint must at least have been triggered.
	if st := h.g.driver.coord.Status(); len(st.Pending) == 0 && st.LastCompleted < h.final {
		t.Errorf("the final checkpoint %d failed and no checkpoint was triggered again within the stop window (checkpoint.timeout): status %+v\ntrace:\n%s",
			h.final, st, trace)
	}
	_ = time.Second
}

func drvContainsID(ids []checkpoint.ID, id checkpoint.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
