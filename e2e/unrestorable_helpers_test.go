package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ---------------------------------------------------------------------------
// Checkpoints that cannot be restored

// metricRestoreFallbacks counts starts that restored an older checkpoint
// than the newest on disk.
const metricRestoreFallbacks = "connector_checkpoint_restore_fallbacks_total"

// checkpointRow is a row of `connector checkpoints list --json`.
type checkpointRow struct {
	ID     uint64 `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// checkpointList runs `connector checkpoints list --json` on the job's
// latest config (no run may be running) and returns its rows, oldest
// first.
func (j *job) checkpointList() []checkpointRow {
	j.t.Helper()
	out, err := j.command(30*time.Second, "checkpoints", "list", "--config", j.cfgPath, "--json")
	if err != nil {
		j.t.Fatalf("connector checkpoints list --config %s --json: %v\n%s", j.cfgPath, err, out)
	}
	var rows []checkpointRow
	if err := json.Unmarshal(out, &rows); err != nil {
		j.t.Fatalf("connector checkpoints list --json: %v\n%s", err, out)
	}
	return rows
}

// checkpointFiles runs `connector checkpoints show ID` and returns the
// state files checkpoint id references (paths relative to state.dir).
func (j *job) checkpointFiles(id uint64) []string {
	j.t.Helper()
	out, err := j.command(30*time.Second, "checkpoints", "show", "--config", j.cfgPath, strconv.FormatUint(id, 10))
	if err != nil {
		j.t.Fatalf("connector checkpoints show --config %s %d: %v\n%s", j.cfgPath, id, err, out)
	}
	var md struct {
		Tasks map[string]struct {
			Files []string `json:"files"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out, &md); err != nil {
		j.t.Fatalf("connector checkpoints show %d: %v\n%s", id, err, out)
	}
	var files []string
	for _, task := range md.Tasks {
		files = append(files, task.Files...)
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// metaName matches a checkpoint's metadata file: chk-<id, 20 digits>.meta.
var metaName = regexp.MustCompile(`^chk-(\d{20})\.meta$`)

// metaPath returns the path of checkpoint id's metadata file.
func (j *job) metaPath(id uint64) string {
	j.t.Helper()
	entries, err := os.ReadDir(j.ckptDir)
	if err != nil {
		j.t.Fatal(err)
	}
	for _, e := range entries {
		if m := metaName.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.ParseUint(m[1], 10, 64); err == nil && n == id {
				return filepath.Join(j.ckptDir, e.Name())
			}
		}
	}
	j.t.Fatalf("no metadata file of checkpoint %d in %s", id, j.ckptDir)
	return ""
}

// newestCheckpointHoldsOnlyNewIDs makes the newest checkpoint on disk the
// only one that holds the ids [from, to): its output (visible once it
// completed) and the state they changed. It takes two runs:
//
//   - the first reads the ids [0, from) (produced here) and stops on SIGTERM
//     once a checkpoint at the partition ends has completed;
//   - the second takes a checkpoint at its start (checkpoint.initial_delay
//     0s), before anything new comes, and no other (checkpoint.interval 1h)
//     but the final one on SIGTERM, which it gets once it has written the
//     ids [from, to) (produced here) to the sink: connector_records_out_total
//     says so.
//
// It requires every id in [0, to) visible exactly once, and returns the
// ids of the checkpoint before the newest (the second run's first) and of
// the newest. The job's spec.Config is left empty.
func (j *job) newestCheckpointHoldsOnlyNewIDs(from, to int) (prev, newest uint64) {
	j.t.Helper()
	p := j.start()
	produceIDs(j.t, j.brokers, j.topic, 0, from, false)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)

	j.spec.Config = map[string]map[string]any{"checkpoint": {"interval": "1h", "initial_delay": "0s"}}
	p = j.start()
	first := j.waitFirstCheckpoint(p, time.Minute)
	produceIDs(j.t, j.brokers, j.topic, from, to, false)
	j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v >= float64(to-from) }, 50*time.Millisecond, time.Minute)
	if id, _, err := p.lastCompleted(); err != nil || id != first {
		j.fatalf(p, "%s: last completed checkpoint %d (%v) before the SIGTERM, want still its first, %d: the newest checkpoint would not hold the new ids alone",
			p, id, err, first)
	}
	j.terminate(p, time.Minute)
	j.spec.Config = nil
	j.requireExactlyOnce(to, 0, "before_the_damage")

	rows := j.checkpointList()
	if len(rows) < 2 {
		j.t.Fatalf("checkpoints on disk: %v, want at least 2", rows)
	}
	prev, newest = rows[len(rows)-2].ID, rows[len(rows)-1].ID
	if prev != first {
		j.t.Fatalf("checkpoints on disk: %v; the one before the newest (%d) is not the second run's first (%d)", rows, prev, first)
	}
	j.t.Logf("checkpoint %d holds the ids [0, %d); checkpoint %d, the newest, adds [%d, %d)", prev, from, newest, from, to)
	return prev, newest
}

// waitFirstCheckpoint polls /api/checkpoints until p has completed a
// checkpoint, and returns its id.
func (j *job) waitFirstCheckpoint(p *proc, timeout time.Duration) uint64 {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		id, _, err := p.lastCompleted()
		if err == nil && id > 0 {
			return id
		}
		j.requireRunning(p, "waiting for its first checkpoint")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: no checkpoint completed within %v (last error: %v)", p, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fallBack is the log line of a start that restores an older checkpoint
// than the newest on disk.
type fallBack struct {
	Skipped      []string `json:"skipped"`
	Restoring    string   `json:"restoring"`
	VisibleAfter int      `json:"visible_after"`
	Safe         bool     `json:"safe"`
}

// requireFallBack waits until p (started with checkpoint.on_unrestorable:
// fall_back) is ready, and requires that it fell back past checkpoint
// skipped to checkpoint restored: connector_checkpoint_restore_fallbacks_total
// is 1, and its error log line names both and says that the sink shows
// output of the skipped checkpoint.
func (j *job) requireFallBack(p *proc, restored, skipped uint64) {
	j.t.Helper()
	j.waitReady(p, time.Minute)
	if v, err := p.metric(metricRestoreFallbacks); err != nil || v != 1 {
		j.errorf(p, "%s: %s = %v (%v), want 1", p, metricRestoreFallbacks, v, err)
	}
	lines := logLines[fallBack](j, "the newest checkpoints cannot be restored; restoring an older one", p)
	if len(lines) != 1 {
		j.fatalf(p, "%s: %d log lines saying it fell back, want 1", p, len(lines))
	}
	fb := lines[0]
	j.t.Logf("%s fell back: %+v", p, fb)
	wantSkipped := fmt.Sprintf("checkpoint %d: ", skipped)
	if fb.Restoring != fmt.Sprintf("checkpoint %d", restored) || len(fb.Skipped) != 1 ||
		!strings.HasPrefix(fb.Skipped[0], wantSkipped) || fb.Safe || fb.VisibleAfter == 0 {
		j.errorf(p, "%s fell back %+v, want checkpoint %d restored, checkpoint %d skipped, and its output visible (not safe)",
			p, fb, restored, skipped)
	}
}

// requireOnceExceptTwice reads the visible output and requires every id in
// [0, n) exactly once, except the ids in [from, to), exactly twice; and
// nothing else.
func (j *job) requireOnceExceptTwice(n, from, to int) {
	j.t.Helper()
	out, err := j.out.read()
	if err != nil {
		j.t.Fatalf("read output: %v", err)
	}
	var wrong []string
	others := 0
	for id, c := range out.counts {
		if id < 0 || id >= int64(n) {
			others += c
		}
	}
	for id := range int64(n) {
		want := 1
		if id >= int64(from) && id < int64(to) {
			want = 2
		}
		if c := out.counts[id]; c != want {
			wrong = append(wrong, fmt.Sprintf("id %d %d times, want %d", id, c, want))
		}
	}
	j.t.Logf("output: %d lines in %d files; ids [0, %d) once but [%d, %d) twice: %d ids otherwise, %d lines of other ids, %d bad",
		out.lines, out.files, n, from, to, len(wrong), others, len(out.bad))
	if len(wrong) > 0 || others > 0 || len(out.bad) > 0 {
		j.t.Errorf("output over %d runs: %d ids not as wanted (e.g. %v), %d lines of ids outside [0, %d), bad: %q",
			len(j.runs), len(wrong), wrong[:min(len(wrong), 10)], others, n, out.bad[:min(len(out.bad), 5)])
	}
}
