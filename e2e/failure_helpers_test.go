package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"time"
)

// ---------------------------------------------------------------------------
// Runs that end by themselves
//
// A failure no restart can fix ends `connector run` with exit status 1 and
// one "job failed" log line saying why; a failure a restart may fix first
// restarts the job inside the process, logging msgRestarting.

const (
	msgJobFailed  = "job failed"
	msgRestarting = "job failed; restarting from the last completed checkpoint"
)

// errorLine is a log line's error.
type errorLine struct {
	Error string `json:"error"`
}

// requireFailure waits up to timeout for p to end by itself and requires
// exit status 1 and a "job failed" log line whose error holds each of
// want. It returns that error and how long after its start p ended.
func (j *job) requireFailure(p *proc, timeout time.Duration, want ...string) (string, time.Duration) {
	j.t.Helper()
	return j.requireExit(p, timeout, 1, want...)
}

// requireConfigFailure is requireFailure for a sink config fault found at
// start (what the config names is missing or refused by the sink's
// system): exit status 2, at once, without restarts.
func (j *job) requireConfigFailure(p *proc, timeout time.Duration, want ...string) (string, time.Duration) {
	j.t.Helper()
	msg, took := j.requireExit(p, timeout, 2, want...)
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job %d times before it exited 2 (first: %s): a config fault is not retried", p, len(errs), errs[0])
	}
	return msg, took
}

func (j *job) requireExit(p *proc, timeout time.Duration, want int, wantText ...string) (string, time.Duration) {
	j.t.Helper()
	if !p.wait(timeout) {
		j.fatalf(p, "%s still running %v after its start, want it to end by itself with exit status %d",
			p, time.Since(p.started).Round(time.Millisecond), want)
	}
	took := p.ended.Sub(p.started)
	if code := p.state.ExitCode(); code != want {
		j.fatalf(p, "%s: %s, want exit status %d", p, p.status(), want)
	}
	lines := logLines[errorLine](j, msgJobFailed, p)
	if len(lines) != 1 {
		j.fatalf(p, "%s: %d %q log lines, want 1", p, len(lines), msgJobFailed)
	}
	msg := lines[0].Error
	var missing []string
	for _, w := range wantText {
		if !strings.Contains(msg, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		j.fatalf(p, "%s: its failure does not name %q: %s", p, missing, msg)
	}
	short := msg
	if len(short) > 600 {
		short = short[:600] + "..."
	}
	j.t.Logf("%s: exit status %d %v after its start: %s", p, want, took.Round(time.Millisecond), short)
	return msg, took
}

// restartErrors returns why p restarted the job in process, in order.
func (j *job) restartErrors(p *proc) []string {
	var errs []string
	for _, l := range logLines[errorLine](j, msgRestarting, p) {
		errs = append(errs, l.Error)
	}
	return errs
}

// requireNoRestart fails the test if p restarted the job in process: a
// refusal is final, never retried.
func (j *job) requireNoRestart(p *proc) {
	j.t.Helper()
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job %d times before it ended (first: %s); a refusal must not be retried", p, len(errs), errs[0])
	}
}

// waitRestart polls p's log until it restarted the job in process, and
// returns why. It fails the test when p ends first or timeout passes.
func (j *job) waitRestart(p *proc, timeout time.Duration) string {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if errs := j.restartErrors(p); len(errs) > 0 {
			return errs[0]
		}
		j.requireRunning(p, "waiting for an in-process restart")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: no in-process restart within %v", p, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logged reports whether p logged a line with message.
func (j *job) logged(p *proc, message string) bool {
	return len(logLines[json.RawMessage](j, message, p)) > 0
}

// logsWithField returns p's log lines of level whose field key equals value.
func (j *job) logsWithField(p *proc, level, key, value string) []map[string]any {
	j.t.Helper()
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		j.t.Fatalf("read %s: %v", p.logPath, err)
	}
	var out []map[string]any
	for line := range strings.SplitSeq(string(data), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		if l["level"] == level && l[key] == value {
			out = append(out, l)
		}
	}
	return out
}

// logsContaining returns p's log lines (raw) that contain s.
func (j *job) logsContaining(p *proc, s string) []string {
	j.t.Helper()
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		j.t.Fatalf("read %s: %v", p.logPath, err)
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}
