package e2e

// The harness: build the binary once, run it as a process per start with its
// own config, port and log file, produce ids, read the visible output, scrape
// /metrics, and ask Kafka and the checkpoint CLI for offsets. Helpers that
// can fail call t.Fatalf from the test goroutine; the producer goroutine only
// records its error.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// envCrashAt is the contract's crash-point variable: CONNECTOR_CRASH_AT=<name>[:N]
// makes the process SIGKILL itself the Nth time it reaches the point.
const envCrashAt = "CONNECTOR_CRASH_AT"

// The contract's metric names.
const (
	metricRecordsOut  = "connector_records_out_total"
	metricCheckpoints = "connector_checkpoints_completed_total"
)

// ---------------------------------------------------------------------------
// The binary

var bin struct {
	dir  string
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "connector-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	bin.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// connectorBinary builds ./cmd/connector once per test binary and returns its
// path. The build happens on first use, so the helpers' unit tests need none.
func connectorBinary(t testing.TB) string {
	t.Helper()
	bin.once.Do(func() {
		path := filepath.Join(bin.dir, "connector")
		args := []string{"build", "-o", path}
		if os.Getenv("E2E_RACE") != "" {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/connector")
		cmd := exec.Command("go", args...)
		cmd.Dir = ".." // the module root: this package is <root>/e2e
		if out, err := cmd.CombinedOutput(); err != nil {
			bin.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		bin.path = path
	})
	if bin.err != nil {
		t.Fatalf("build connector: %v", bin.err)
	}
	return bin.path
}

// cluster is the broker of a test: Apache Kafka from KAFKA_BROKERS, or kfake
// when E2E_KFAKE is set (for developing the harness only).
func cluster(t testing.TB) kafkatest.Brokers {
	t.Helper()
	if os.Getenv("E2E_KFAKE") != "" {
		t.Logf("E2E_KFAKE is set: running against kfake, which proves nothing about exactly-once")
		return kafkatest.Fake(t)
	}
	return kafkatest.RealCluster(t)
}

// newRand returns the test's random source, seeded from E2E_SEED or the clock,
// and logs the seed so that a failing run can be replayed.
func newRand(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("E2E_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("random seed %d (replay with E2E_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// ---------------------------------------------------------------------------
// A job and its runs

// jobSpec is what varies between scenarios; zero values take the defaults
// noted.
type jobSpec struct {
	Partitions  int32            // of the source topic; default 4
	Parallelism int              // pipeline.parallelism; default 1
	Interval    time.Duration    // checkpoint.interval; default 300ms
	Transforms  []map[string]any // pipeline.transforms, as written in YAML
}

// job is one connector job: a topic, a working directory and the runs
// (processes) started on them, one at a time. Every run gets a fresh config
// file (only http.addr changes), a fresh port and its own log files. The
// processes are SIGKILLed when the test ends; if it failed, the tails of the
// last runs' stderr are printed.
type job struct {
	t       *testing.T
	bin     string
	brokers kafkatest.Brokers
	spec    jobSpec
	name    string // job name and consumer group
	topic   string
	dir     string // working directory of every run; config and logs live here
	outDir  string // sink.path
	cfgPath string // the config of the latest run
	runs    []*proc
	out     *outputReader
	tailed  map[*proc]bool
}

var jobSeq atomic.Int64

func newJob(t *testing.T, b kafkatest.Brokers, spec jobSpec) *job {
	t.Helper()
	if spec.Partitions == 0 {
		spec.Partitions = 4
	}
	if spec.Parallelism == 0 {
		spec.Parallelism = 1
	}
	if spec.Interval == 0 {
		spec.Interval = 300 * time.Millisecond
	}
	j := &job{
		t:       t,
		bin:     connectorBinary(t),
		brokers: b,
		spec:    spec,
		name:    fmt.Sprintf("e2e-%s-%d-%d", shortName(t.Name()), time.Now().UnixMilli()%1_000_000, jobSeq.Add(1)),
		topic:   kafkatest.Topic(t, b, spec.Partitions),
		dir:     t.TempDir(),
		tailed:  map[*proc]bool{},
	}
	j.outDir = filepath.Join(j.dir, "out")
	if err := os.MkdirAll(j.outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	j.out = newOutputReader(j.outDir)
	// Registered after TempDir and Topic, so it runs before they are removed.
	t.Cleanup(j.cleanup)
	j.validate()
	t.Logf("job %s: topic %s (%d partitions), parallelism %d, checkpoint.interval %v, broker %s",
		j.name, j.topic, spec.Partitions, spec.Parallelism, spec.Interval, b)
	return j
}

// shortName makes a test name usable inside a job name (letters, digits, '.',
// '_' and '-') and short.
func shortName(s string) string {
	s = strings.TrimPrefix(s, "Test")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() > 40 {
		return b.String()[:40]
	}
	return b.String()
}

// writeConfig writes the job's config with http.addr set to addr and returns
// its path.
func (j *job) writeConfig(file, addr string) string {
	j.t.Helper()
	transforms := []any{}
	for _, tr := range j.spec.Transforms {
		transforms = append(transforms, tr)
	}
	cfg := map[string]any{
		"name":  j.name,
		"kafka": map[string]any{"brokers": j.brokers.Addrs},
		"source": map[string]any{
			"topics":       []string{j.topic},
			"group":        j.name,
			"start_offset": "earliest",
		},
		"checkpoint": map[string]any{
			"interval": j.spec.Interval.String(),
			"dir":      filepath.Join(j.dir, "checkpoints"),
		},
		"state": map[string]any{"dir": filepath.Join(j.dir, "state")},
		"pipeline": map[string]any{
			"parallelism": j.spec.Parallelism,
			"transforms":  transforms,
		},
		"sink": map[string]any{"type": "file", "path": j.outDir, "format": "jsonl"},
		"http": map[string]any{"addr": addr},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		j.t.Fatalf("marshal config: %v", err)
	}
	path := filepath.Join(j.dir, file)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		j.t.Fatal(err)
	}
	j.cfgPath = path
	return path
}

// validate runs `connector validate` on the job's config, so that a config
// the connector rejects fails here, with its message, and not as a run that
// exits 2.
func (j *job) validate() {
	j.t.Helper()
	cfg := j.writeConfig("config-validate.yaml", "127.0.0.1:0")
	out, err := j.command(30*time.Second, "validate", "--config", cfg)
	if err != nil {
		j.t.Fatalf("connector validate --config %s: %v\n%s", cfg, err, out)
	}
}

// command runs the binary with args in the job's directory and returns its
// combined output.
func (j *job) command(timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, args...)
	cmd.Dir = j.dir
	cmd.Env = environWithout(envCrashAt)
	return cmd.CombinedOutput()
}

// proc is one run of the connector.
type proc struct {
	n       int // 1 for the job's first run
	env     []string
	addr    string // http.addr
	logPath string // stderr: zerolog JSON lines
	started time.Time
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has been waited for
	state   *os.ProcessState
}

// start starts a run with the extra environment env (for example
// CONNECTOR_CRASH_AT=mid-commit:1); the variables of the test's own
// environment that could steer the connector are dropped first.
func (j *job) start(env ...string) *proc {
	j.t.Helper()
	for _, p := range j.runs {
		if !p.exited() {
			j.t.Fatalf("harness: run %d is still running; one run at a time", p.n)
		}
	}
	n := len(j.runs) + 1
	p := &proc{n: n, env: env, addr: freeAddr(j.t), done: make(chan struct{})}
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

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait reports whether the process ended within d.
func (p *proc) wait(d time.Duration) bool {
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

func (p *proc) String() string {
	s := fmt.Sprintf("run %d", p.n)
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
	t0 := time.Now()
	deadline := t0.Add(timeout)
	for {
		out, err := j.out.read()
		if err != nil {
			j.fatalf(p, "read output: %v", err)
		}
		present := out.present(n)
		if present == n {
			j.t.Logf("%s: all %d ids visible %v after the wait began", p, n, time.Since(t0).Round(time.Millisecond))
			return out
		}
		j.requireRunning(p, fmt.Sprintf("waiting for all %d ids (%d visible)", n, present))
		if time.Now().After(deadline) {
			recs, _ := p.metric(metricRecordsOut)
			cps, _ := p.metric(metricCheckpoints)
			j.fatalf(p, "after %v only %d of %d ids are visible (%d lines in %d files); %s: %s=%v %s=%v",
				timeout, present, n, out.lines, out.files, p, metricRecordsOut, recs, metricCheckpoints, cps)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// requireExactlyOnce reads the visible output and requires every id in
// [0, n) exactly once and nothing else; it logs the figures in one line.
func (j *job) requireExactlyOnce(n, kills int, extra string) {
	j.t.Helper()
	out, err := j.out.read()
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
	}
}

// ---------------------------------------------------------------------------
// Metrics and readiness

var httpClient = &http.Client{Timeout: time.Second}

func (p *proc) get(path string) (int, []byte, error) {
	resp, err := httpClient.Get("http://" + p.addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// metric scrapes /metrics and returns the sum of the samples of name.
func (p *proc) metric(name string) (float64, error) {
	code, body, err := p.get("/metrics")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("/metrics: HTTP %d", code)
	}
	v, ok := sumMetric(string(body), name)
	if !ok {
		return 0, fmt.Errorf("/metrics has no %s", name)
	}
	return v, nil
}

// waitMetric polls name every interval until pred holds, and returns the
// value and the time since p started. It fails the test when p ends or
// timeout passes.
func (j *job) waitMetric(p *proc, name string, pred func(float64) bool, interval, timeout time.Duration) (float64, time.Duration) {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	var last float64
	for {
		v, err := p.metric(name)
		if err == nil && pred(v) {
			return v, time.Since(p.started)
		}
		lastErr, last = err, v
		j.requireRunning(p, "waiting for "+name)
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: %s did not reach the wanted value within %v (last %v, error %v)", p, name, timeout, last, lastErr)
		}
		time.Sleep(interval)
	}
}

// waitReady polls /readyz until it answers 200.
func (j *job) waitReady(p *proc, timeout time.Duration) time.Duration {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, _, err := p.get("/readyz")
		if err == nil && code == http.StatusOK {
			return time.Since(p.started)
		}
		j.requireRunning(p, "waiting for /readyz")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: /readyz not 200 within %v (last: HTTP %d, %v)", p, timeout, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sumMetric returns the sum of every sample of the metric called name in the
// Prometheus text format, and whether there was one. Metrics that merely
// share the prefix (name_created, a histogram's name_bucket) do not count.
func sumMetric(text, name string) (float64, bool) {
	var sum float64
	found := false
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ \t")
		if end < 0 || line[:end] != name {
			continue
		}
		rest := line[end:]
		if rest[0] == '{' {
			close := labelsEnd(rest)
			if close < 0 {
				continue
			}
			rest = rest[close+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// labelsEnd returns the index of the '}' closing the label set s starts
// with, skipping quoted label values (which may hold '}' and escaped quotes).
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i
		}
	}
	return -1
}

// ---------------------------------------------------------------------------
// Producing ids

// producerSpec describes the input: ids 0..N-1 (fewer if stopped early),
// each once, in order, at about Rate ids per second (0: as fast as
// possible), keyed by id. With DupEvery k
// > 0 some ids are sent twice on purpose: every id with id%k == 0 again right
// after itself, every id with id%k == k/2 again 1000 ids later; the copy
// carries "dup":true.
type producerSpec struct {
	N        int
	Rate     float64
	DupEvery int
}

// producer sends ids in a goroutine. Its counters may be read at any time;
// err only after done is closed.
type producer struct {
	spec     producerSpec
	topic    string
	cl       *kgo.Client
	cancel   context.CancelFunc
	sent     atomic.Int64 // ids sent (unique)
	dups     atomic.Int64 // intentional duplicates sent
	done     chan struct{}
	halt     chan struct{} // closed by stop
	started  time.Time
	finished time.Time
	err      error
	errOnce  sync.Once
}

// startProducer starts producing to topic; the client is closed when the test
// ends.
func startProducer(t testing.TB, b kafkatest.Brokers, topic string, spec producerSpec) *producer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addrs...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond),
		// Idempotent (the default) with all acks: a retry never writes an id twice.
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{spec: spec, topic: topic, cl: cl, cancel: cancel,
		done: make(chan struct{}), halt: make(chan struct{}), started: time.Now()}
	t.Cleanup(func() {
		cancel()
		<-p.done
		cl.Close()
	})
	go p.run(ctx)
	return p
}

func (p *producer) fail(err error) {
	p.errOnce.Do(func() { p.err = err })
}

func (p *producer) run(ctx context.Context) {
	defer close(p.done)
	defer func() { p.finished = time.Now() }()
	const dupDelay = 1000
	var delayed []int // ids to send again, in the order they fall due
	send := func(id int, dup bool) {
		r := &kgo.Record{Key: []byte(strconv.Itoa(id)), Value: recordValue(id, dup)}
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil && ctx.Err() == nil {
				p.fail(fmt.Errorf("produce id %d: %w", id, err))
			}
		})
		if dup {
			p.dups.Add(1)
		} else {
			p.sent.Add(1)
		}
	}
	next := 0
	for next < p.spec.N {
		target := p.spec.N
		if p.spec.Rate > 0 {
			target = min(p.spec.N, int(p.spec.Rate*time.Since(p.started).Seconds())+1)
		}
		for ; next < target; next++ {
			send(next, false)
			if k := p.spec.DupEvery; k > 0 {
				if next%k == 0 {
					send(next, true)
				}
				if next%k == k/2 {
					delayed = append(delayed, next)
				}
				for len(delayed) > 0 && delayed[0]+dupDelay <= next {
					send(delayed[0], true)
					delayed = delayed[1:]
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.halt:
			next = p.spec.N // stop sending new ids; send what is owed and flush
		case <-time.After(5 * time.Millisecond):
		}
	}
	for _, id := range delayed {
		send(id, true)
	}
	if err := p.cl.Flush(ctx); err != nil && ctx.Err() == nil {
		p.fail(fmt.Errorf("flush: %w", err))
	}
}

// recordValue is the JSON value of id: {"id":N,...}, 60 to 100 bytes.
func recordValue(id int, dup bool) []byte {
	v := fmt.Sprintf(`{"id":%d,"ts":%d,"customer":"c-%d","amount":%d.%02d,"pad":"xxxxxxxxxxxx"`,
		id, time.Now().UnixMilli(), id%997, id%500, id%100)
	if dup {
		v += `,"dup":true`
	}
	return []byte(v + "}")
}

func (p *producer) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop ends production early: no new id is sent; those sent are flushed.
// Then it waits as wait does; the ids sent are [0, sent).
func (p *producer) stop(t testing.TB, timeout time.Duration) int {
	t.Helper()
	close(p.halt)
	p.wait(t, timeout)
	return int(p.sent.Load())
}

// wait waits for every id to be sent and acknowledged.
func (p *producer) wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("producer: %d of %d ids sent after %v", p.sent.Load(), p.spec.N, timeout)
	}
	if p.err != nil {
		t.Fatalf("producer: %v", p.err)
	}
	t.Logf("producer: %d ids and %d intentional duplicates in %v",
		p.sent.Load(), p.dups.Load(), p.finished.Sub(p.started).Round(time.Millisecond))
}

// ---------------------------------------------------------------------------
// Reading the visible output

// output is what the file sink shows: the committed files under sink.path.
type output struct {
	counts map[int64]int // id -> lines holding it
	lines  int
	files  int
	bad    []string // lines that are no record of ours, files torn mid-line
}

// present returns how many of the ids in [0, n) appear at least once.
func (o output) present(n int) int {
	c := 0
	for id := range o.counts {
		if id >= 0 && id < int64(n) {
			c++
		}
	}
	return c
}

// outputReader reads the visible files under a directory: every file and
// directory whose name starts with '.' or '_' is skipped (DESIGN.md: in
// progress or pending). A committed file is never rewritten, so a file seen
// before with the same size and mtime is not read again.
type outputReader struct {
	dir   string
	cache map[string]parsedFile
}

type parsedFile struct {
	size  int64
	mtime time.Time
	ids   []int64
	bad   []string
}

func newOutputReader(dir string) *outputReader {
	return &outputReader{dir: dir, cache: map[string]parsedFile{}}
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

func (r *outputReader) read() (output, error) {
	out := output{counts: map[int64]int{}}
	seen := map[string]bool{}
	err := filepath.WalkDir(r.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != r.dir {
				return nil // renamed or removed while we walked
			}
			return err
		}
		if path == r.dir {
			return nil
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		pf, ok := r.cache[path]
		if !ok || pf.size != info.Size() || !pf.mtime.Equal(info.ModTime()) {
			pf, err = parseFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			} else if err != nil {
				return err
			}
			pf.size, pf.mtime = info.Size(), info.ModTime()
			r.cache[path] = pf
		}
		seen[path] = true
		out.files++
		out.lines += len(pf.ids)
		for _, id := range pf.ids {
			out.counts[id]++
		}
		out.bad = append(out.bad, pf.bad...)
		return nil
	})
	for path := range r.cache {
		if !seen[path] {
			delete(r.cache, path)
		}
	}
	return out, err
}

// parseFile reads one visible jsonl file: every line must be a JSON object
// with a numeric "id"; the file must end with a newline.
func parseFile(path string) (parsedFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return parsedFile{}, err
	}
	var pf parsedFile
	name := filepath.Base(path)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		pf.bad = append(pf.bad, fmt.Sprintf("%s: last line has no newline (torn file?)", name))
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for ln := 1; sc.Scan(); ln++ {
		var rec struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.ID == nil {
			pf.bad = append(pf.bad, fmt.Sprintf("%s:%d: not a record with an id: %.120q", name, ln, sc.Text()))
			continue
		}
		pf.ids = append(pf.ids, *rec.ID)
	}
	return pf, sc.Err()
}

// tally is the verdict on an output against ids [0, n).
type tally struct {
	duplicates int     // extra copies: lines beyond the first for an id
	missing    int     // ids in [0, n) absent
	unexpected int     // lines whose id is outside [0, n)
	bad        int     // lines or files that are not records
	dupIDs     []int64 // examples, at most 10 each
	missingIDs []int64
	badLines   []string
}

func tallyOutput(o output, n int) tally {
	var tl tally
	for id, c := range o.counts {
		switch {
		case id < 0 || id >= int64(n):
			tl.unexpected += c
		case c > 1:
			tl.duplicates += c - 1
			tl.dupIDs = append(tl.dupIDs, id)
		}
	}
	for id := range int64(n) {
		if o.counts[id] == 0 {
			tl.missing++
			if len(tl.missingIDs) < 10 {
				tl.missingIDs = append(tl.missingIDs, id)
			}
		}
	}
	slices.Sort(tl.dupIDs)
	if len(tl.dupIDs) > 10 {
		tl.dupIDs = tl.dupIDs[:10]
	}
	tl.bad = len(o.bad)
	tl.badLines = o.bad[:min(len(o.bad), 5)]
	return tl
}

func (tl tally) ok() bool {
	return tl.duplicates == 0 && tl.missing == 0 && tl.unexpected == 0 && tl.bad == 0
}

func (tl tally) String() string {
	return fmt.Sprintf("duplicates=%d (e.g. ids %v) missing=%d (e.g. ids %v) unexpected=%d bad=%d %q",
		tl.duplicates, tl.dupIDs, tl.missing, tl.missingIDs, tl.unexpected, tl.bad, tl.badLines)
}

// ---------------------------------------------------------------------------
// Offsets: Kafka's and the checkpoint's

// committedOffsets returns the group's committed offset of every partition
// of topic.
func committedOffsets(t testing.TB, b kafkatest.Brokers, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resps, err := kafkatest.Admin(t, b).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of group %s: %v", group, err)
	}
	got := map[int32]int64{}
	for p, r := range resps[topic] {
		if r.Err != nil {
			t.Fatalf("fetch offsets of group %s, %s/%d: %v", group, topic, p, r.Err)
		}
		got[p] = r.At
	}
	return got
}

// endOffsets returns the end offset (high watermark) of every partition of
// topic.
func endOffsets(t testing.TB, b kafkatest.Brokers, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := kafkatest.Admin(t, b).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	got := map[int32]int64{}
	for p, o := range listed[topic] {
		if o.Err != nil {
			t.Fatalf("list end offsets of %s/%d: %v", topic, p, o.Err)
		}
		got[p] = o.Offset
	}
	return got
}

// checkpointOffsets finds the source offsets of topic in the output of
// `connector checkpoints show`. That output's shape is not fixed yet, so
// this looks for the offsets wherever they are:
//
//   - JSON, anywhere in the tree: {"<topic>": {"0": 12, "1": 40}} (the
//     source's Offsets), or objects {"topic": T, "partition": P, "offset": O}
//     ("next_offset" also accepted); strings holding base64 of JSON (a
//     snapshot's raw Data) are decoded and searched too;
//   - text: "<topic>/0=12 <topic>/1=40" (Offsets.String).
//
// The sets found are merged (the offsets are split over the source tasks);
// two different offsets for one partition are an error (ambiguous output),
// as is finding none.
func checkpointOffsets(out []byte, topic string) (map[int32]int64, error) {
	var found []map[int32]int64
	var root any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&root); err == nil {
		found = findOffsets(root, topic, found)
	}
	if len(found) == 0 {
		re := regexp.MustCompile(regexp.QuoteMeta(topic) + `/(\d+)=(\d+)`)
		m := map[int32]int64{}
		for _, sm := range re.FindAllSubmatch(out, -1) {
			p, _ := strconv.ParseInt(string(sm[1]), 10, 32)
			o, _ := strconv.ParseInt(string(sm[2]), 10, 64)
			m[int32(p)] = o
		}
		if len(m) > 0 {
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no offsets of topic %s in the output", topic)
	}
	merged := map[int32]int64{}
	for _, f := range found {
		for p, o := range f {
			if prev, ok := merged[p]; ok && prev != o {
				return nil, fmt.Errorf("ambiguous: offsets %d and %d for %s/%d in the output", prev, o, topic, p)
			}
			merged[p] = o
		}
	}
	return merged, nil
}

func findOffsets(v any, topic string, found []map[int32]int64) []map[int32]int64 {
	switch v := v.(type) {
	case map[string]any:
		if m, ok := partitionMap(v[topic]); ok {
			found = append(found, m)
		}
		if v["topic"] == topic {
			p, okP := jsonInt(v["partition"])
			o, okO := jsonInt(v["offset"])
			if !okO {
				o, okO = jsonInt(v["next_offset"])
			}
			if okP && okO {
				found = append(found, map[int32]int64{int32(p): o})
			}
		}
		for _, child := range v {
			found = findOffsets(child, topic, found)
		}
	case []any:
		// A list of {"topic","partition","offset"} objects is one set.
		merged := map[int32]int64{}
		var rest []map[int32]int64
		for _, child := range v {
			for _, m := range findOffsets(child, topic, nil) {
				if len(m) == 1 && isEntry(child, topic) {
					maps.Copy(merged, m)
				} else {
					rest = append(rest, m)
				}
			}
		}
		if len(merged) > 0 {
			found = append(found, merged)
		}
		found = append(found, rest...)
	case string:
		if len(v) >= 8 {
			if raw, err := base64.StdEncoding.DecodeString(v); err == nil && json.Valid(raw) {
				var inner any
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber()
				if dec.Decode(&inner) == nil {
					found = findOffsets(inner, topic, found)
				}
			}
		}
	}
	return found
}

func isEntry(v any, topic string) bool {
	m, ok := v.(map[string]any)
	return ok && m["topic"] == topic
}

// partitionMap reads {"0": 12, "1": 40}.
func partitionMap(v any) (map[int32]int64, bool) {
	obj, ok := v.(map[string]any)
	if !ok || len(obj) == 0 {
		return nil, false
	}
	m := map[int32]int64{}
	for k, x := range obj {
		p, err := strconv.ParseInt(k, 10, 32)
		o, ok := jsonInt(x)
		if err != nil || !ok {
			return nil, false
		}
		m[int32(p)] = o
	}
	return m, true
}

func jsonInt(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), v == float64(int64(v))
	}
	return 0, false
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if x, ok := b[p]; !ok || x != o {
			return false
		}
	}
	return true
}
