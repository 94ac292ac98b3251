package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one run of the connector.
type proc struct {
	n       int    // 1 for the job's first run
	label   string // the job's label ("twin"), "" for most
	env     []string
	addr    string // http.addr
	logPath string // stderr: zerolog JSON lines
	started time.Time
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has been waited for
	ended   time.Time     // when it was waited for; set before done is closed
	state   *os.ProcessState
}

// start starts a run with the extra environment env (for example
// CONNECTOR_CRASH_AT=mid-commit:1); the variables of the test's own
// environment that could steer the connector are dropped first. A job
// runs one run at a time, unless it runs in group mode, whose processes
// run side by side (group_helpers_test.go).
func (j *job) start(env ...string) *proc {
	j.t.Helper()
	for _, p := range j.runs {
		if !p.exited() && !j.groupMode() {
			j.t.Fatalf("harness: run %d is still running; one run at a time", p.n)
		}
	}
	if j.newMachine {
		for _, d := range []string{j.ckptDir, j.stateDir} {
			if err := os.RemoveAll(d); err != nil {
				j.t.Fatal(err)
			}
		}
	}
	n := len(j.runs) + 1
	p := &proc{n: n, label: j.label, env: env, addr: freeAddr(j.t), done: make(chan struct{})}
	cfg := j.writeConfig(fmt.Sprintf("config-%02d.yaml", n), p.addr)
	p.logPath = filepath.Join(j.dir, fmt.Sprintf("run-%02d.stderr", n))
	stderr, err := os.Create(p.logPath)
	if err != nil {
		j.t.Fatal(err)
	}
	defer stderr.Close() // the child has its own copy
	stdout, err := os.Create(filepath.Join(j.dir, fmt.Sprintf("run-%02d.stdout", n)))
	if err != nil {
		j.t.Fatal(err)
	}
	defer stdout.Close()

	p.cmd = exec.Command(j.bin, "run", "--config", cfg)
	p.cmd.Dir = j.dir
	p.cmd.Env = append(environWithout(envCrashAt), env...)
	p.cmd.Stdout, p.cmd.Stderr = stdout, stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		j.t.Fatalf("start connector: %v", err)
	}
	go func() {
		_ = p.cmd.Wait() // the outcome is in ProcessState
		p.state = p.cmd.ProcessState
		p.ended = time.Now()
		close(p.done)
	}()
	j.runs = append(j.runs, p)
	return p
}

func environWithout(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, name+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// handedOut holds every address freeAddr returned in this test binary.
var handedOut struct {
	sync.Mutex
	addrs map[string]bool
}

// freeAddr returns a loopback address whose port was free a moment ago and
// that it never returned before: the kernel may hand out the port of a run
// that has not bound it yet again (members of a group start side by side).
func freeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.addrs == nil {
		handedOut.addrs = map[string]bool{}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		addr := l.Addr().String()
		l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatalf("find a free port: 100 ports in a row were handed out before")
	return ""
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait reports whether the process ended within d (at once if it has
// ended already, whatever d).
func (p *proc) wait(d time.Duration) bool {
	if p.exited() {
		return true
	}
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// signal sends sig unless the process has already been waited for.
func (p *proc) signal(sig os.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig) // it may have just exited
	}
}

// killedBy reports whether the ended process died of sig.
func (p *proc) killedBy(sig syscall.Signal) bool {
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// status describes how the process ended, or that it has not.
func (p *proc) status() string {
	if !p.exited() {
		return "still running"
	}
	return p.state.String()
}

// pid is the process id of the run.
func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) String() string {
	s := fmt.Sprintf("run %d", p.n)
	if p.label != "" {
		s = p.label + " " + s
	}
	if len(p.env) > 0 {
		s += " (" + strings.Join(p.env, " ") + ")"
	}
	return s
}

// tail returns the last n lines of the run's stderr.
func (p *proc) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 600 {
			lines[i] = l[:600] + "..."
		}
	}
	return strings.Join(lines, "\n")
}

// logTail prints the tail of p's stderr into the test log, once per run.
func (j *job) logTail(p *proc) {
	j.t.Helper()
	if j.tailed[p] {
		return
	}
	j.tailed[p] = true
	j.t.Logf("--- %s of job %s, %s, stderr (last 40 lines of %s):\n%s\n---", p, j.name, p.status(), p.logPath, p.tail(40))
}

// fatalf prints p's stderr tail and fails the test now.
func (j *job) fatalf(p *proc, format string, args ...any) {
	j.t.Helper()
	j.logTail(p)
	j.t.Fatalf(format, args...)
}

// errorf prints p's stderr tail and marks the test failed.
func (j *job) errorf(p *proc, format string, args ...any) {
	j.t.Helper()
	j.logTail(p)
	j.t.Errorf(format, args...)
}

func (j *job) cleanup() {
	for _, p := range j.runs {
		if !p.exited() {
			p.signal(syscall.SIGKILL)
			p.wait(10 * time.Second)
		}
	}
	if j.t.Failed() {
		for _, p := range j.runs[max(0, len(j.runs)-2):] {
			j.logTail(p)
		}
	}
	j.logLevels()
	j.checkLogLines()
}

// checkLogLines parses every line every run wrote to stderr strictly: one
// JSON object per line, each key once, a level, a time and a message. A
// SIGKILL may cut the last line short, and a run that exits 2 ends with
// the config file's name and the problem, for a human; only that last line
// may be another thing.
func (j *job) checkLogLines() {
	for _, p := range j.runs {
		data, err := os.ReadFile(p.logPath)
		if err != nil {
			j.t.Errorf("read %s: %v", p.logPath, err)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		for i, line := range lines {
			if line == "" {
				continue
			}
			if err := strictLogLine(line); err != nil {
				if i == len(lines)-1 && p.killedBy(syscall.SIGKILL) && !strings.HasSuffix(string(data), "\n") {
					continue // cut by the kill
				}
				if i == len(lines)-1 && p.exited() && p.state.ExitCode() == 2 && strings.HasPrefix(line, j.dir) {
					continue // `connector run`'s last word on a config fault: "<config file>: <problem>", as validate's
				}
				j.t.Errorf("%s line %d: %v: %s", p.logPath, i+1, err, line)
			}
		}
	}
}

// strictLogLine checks one log line: a flat JSON object whose keys are all
// distinct, with level, time and message.
func strictLogLine(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			return fmt.Errorf("key %q twice", k)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("value of %q: %w", k, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value on the line")
	}
	for _, k := range []string{"level", "time", "message"} {
		if !seen[k] {
			return fmt.Errorf("no %q", k)
		}
	}
	return nil
}

// logLevels summarises the warnings and errors the runs logged: a count per
// level and the first few distinct messages, so that a passing test still
// shows what went wrong on the way.
func (j *job) logLevels() {
	counts := map[string]int{}
	var msgs []string
	seen := map[string]bool{}
	for _, p := range j.runs {
		data, err := os.ReadFile(p.logPath)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			var l struct {
				Level   string `json:"level"`
				Message string `json:"message"`
				Error   string `json:"error"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || (l.Level != "warn" && l.Level != "error" && l.Level != "fatal" && l.Level != "panic") {
				continue
			}
			counts[l.Level]++
			key := l.Level + ": " + l.Message
			if !seen[key] && len(msgs) < 5 {
				seen[key] = true
				msgs = append(msgs, fmt.Sprintf("%s (%s, e.g. %.200s)", key, p, l.Error))
			}
		}
	}
	if len(counts) > 0 {
		j.t.Logf("connector logs over %d runs: %v; first distinct: %s", len(j.runs), counts, strings.Join(msgs, "; "))
	}
}

// logLines decodes the log lines with the given message of the runs (all
// of the job's if none are given) into new(T) values, in order.
func logLines[T any](j *job, message string, runs ...*proc) []T {
	if len(runs) == 0 {
		runs = j.runs
	}
	var out []T
	for _, p := range runs {
		data, err := os.ReadFile(p.logPath)
		if err != nil {
			j.t.Fatalf("read %s: %v", p.logPath, err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if !strings.Contains(line, `"message":"`+message+`"`) {
				continue
			}
			var v T
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				j.t.Fatalf("%s: %v: %s", p.logPath, err, line)
			}
			out = append(out, v)
		}
	}
	return out
}

// stateRestore is the contract's "state restored" log line: a worker
// restored its keyed state from the full snapshot Full ("" for none: state
// that began empty) and Changelogs changelogs after it.
type stateRestore struct {
	Worker     int    `json:"worker"`
	Full       string `json:"full"`
	Changelogs int    `json:"changelogs"`
}

func (r stateRestore) String() string {
	full := r.Full
	if full == "" {
		full = "none"
	}
	return fmt.Sprintf("worker %d: full snapshot %s + %d changelogs", r.Worker, full, r.Changelogs)
}

// requireRunning fails the test if p has ended.
func (j *job) requireRunning(p *proc, when string) {
	j.t.Helper()
	if p.exited() {
		j.fatalf(p, "%s: %s of the connector ended by itself: %s", when, p, p.status())
	}
}

// kill SIGKILLs p and waits until it is gone. It fails the test if p had
// already ended some other way.
func (j *job) kill(p *proc) {
	j.t.Helper()
	if p.exited() {
		j.fatalf(p, "%s ended by itself before the kill: %s", p, p.status())
	}
	p.signal(syscall.SIGKILL)
	if !p.wait(15 * time.Second) {
		j.fatalf(p, "%s still running 15s after SIGKILL", p)
	}
	if !p.killedBy(syscall.SIGKILL) {
		j.fatalf(p, "%s ended by itself just before the kill: %s", p, p.status())
	}
}

// terminate sends SIGTERM and requires the contract's answer: a final
// checkpoint, committed, and exit 0, within timeout.
func (j *job) terminate(p *proc, timeout time.Duration) {
	j.t.Helper()
	j.requireRunning(p, "before SIGTERM")
	t0 := time.Now()
	p.signal(syscall.SIGTERM)
	if !p.wait(timeout) {
		j.fatalf(p, "%s still running %v after SIGTERM", p, timeout)
	}
	if code := p.state.ExitCode(); code != 0 {
		j.fatalf(p, "%s after SIGTERM: %s, want exit status 0", p, p.status())
	}
	j.t.Logf("%s: SIGTERM -> exit 0 in %v", p, time.Since(t0).Round(time.Millisecond))
}

// waitForAll polls the visible output until it holds every id in [0, n), and
// returns it. It fails the test when p ends meanwhile or the deadline passes.
func (j *job) waitForAll(p *proc, n int, timeout time.Duration) output {
	j.t.Helper()
	return j.waitForIDs(p, n, n, timeout)
}

// waitForIDs is waitForAll for want of the ids [0, n) (fewer than n when
// some are not to appear: a bad record skipped).
func (j *job) waitForIDs(p *proc, n, want int, timeout time.Duration) output {
	j.t.Helper()
	t0 := time.Now()
	var out output
	j.pollUntil(p, timeout, 250*time.Millisecond, func() (bool, string) {
		var err error
		if out, err = j.out.read(); err != nil {
			j.fatalf(p, "read output: %v", err)
		}
		present := out.present(n)
		return present >= want, fmt.Sprintf("%d of %d ids visible (%d lines in %d files)", present, want, out.lines, out.files)
	})
	j.t.Logf("%s: %d of %d ids visible %v after the wait began", p, want, n, time.Since(t0).Round(time.Millisecond))
	return out
}

// pollUntil checks cond every interval until it holds. It fails the test
// when p ends first or timeout passes, with what cond last said and p's
// record and checkpoint counts.
func (j *job) pollUntil(p *proc, timeout, interval time.Duration, cond func() (bool, string)) {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		j.requireRunning(p, "waiting: "+state)
		if time.Now().After(deadline) {
			recs, _ := p.metric(metricRecordsOut)
			cps, _ := p.metric(metricCheckpoints)
			j.fatalf(p, "after %v: %s; %s: %s=%v %s=%v", timeout, state, p, metricRecordsOut, recs, metricCheckpoints, cps)
		}
		time.Sleep(interval)
	}
}

// requireExactlyOnce reads all the visible output (call it once the job
// stopped) and requires every id in [0, n) exactly once and nothing else;
// it logs the figures in one line.
func (j *job) requireExactlyOnce(n, kills int, extra string) {
	j.t.Helper()
	out, err := j.out.readAll()
	if err != nil {
		j.t.Fatalf("read output: %v", err)
	}
	tl := tallyOutput(out, n)
	if extra != "" {
		extra = " " + extra
	}
	j.t.Logf("exactly-once: records=%d kills=%d duplicates=%d missing=%d%s", n, kills, tl.duplicates, tl.missing, extra)
	if !tl.ok() {
		j.t.Errorf("not exactly once over %d runs: %s", len(j.runs), tl)
		if ex, ok := j.out.(interface{ explain(output, int) string }); ok {
			j.t.Logf("where the missing and duplicated ids are: %s", ex.explain(out, n))
		}
	}
}
