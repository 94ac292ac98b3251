package e2e

// The harness: build the binary once, run it as a process per start with its
// own config, port and log file, produce ids, read the visible output, scrape
// /metrics, and ask Kafka and the checkpoint CLI for offsets. Helpers that
// can fail call t.Fatalf from the test goroutine; the producer goroutine only
// records its error.

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	stopTightBroker()
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
	// Sink, if set, is the whole sink section instead of the file sink's
	// (for example {"type": "postgres", ...}: pg_helpers_test.go).
	Sink map[string]any
	// FullSnapshotAfter is state.full_snapshot_after ("" for the default).
	// A test may change it between runs: each run's config is written from
	// the job's spec at its start.
	FullSnapshotAfter string
	// Config holds more keys by section, written over the harness's own
	// (for example {"source": {"on_position_lost": "earliest"}}). A test
	// may change it between runs, as FullSnapshotAfter.
	Config map[string]map[string]any
	// KafkaSink, if set, makes the job write to a Kafka topic of its own
	// (sink: {type: kafka, topic: ...}) instead of the file sink; its
	// output is read back by an independent read_committed consumer
	// (kafka_output_helpers_test.go).
	KafkaSink *kafkaSinkSpec
}

// job is one connector job: a topic, a working directory and the runs
// (processes) started on them, one at a time (side by side in group mode:
// group_helpers_test.go). Every run gets a fresh config
// file (only http.addr changes, unless the test changed the job's spec), a
// fresh port and its own log files. The processes are SIGKILLed when the
// test ends; if it failed, the tails of the last runs' stderr are printed.
type job struct {
	t        *testing.T
	bin      string
	brokers  kafkatest.Brokers
	spec     jobSpec
	name     string // job name and consumer group
	topic    string
	label    string // "" for the job made by newJob; names a twin's runs
	dir      string // working directory of every run; config and logs live here
	ckptDir  string // checkpoint.dir
	stateDir string // state.dir
	outDir   string // sink.path
	outTopic string // sink.topic, with spec.KafkaSink
	cfgPath  string // the config of the latest run
	runs     []*proc
	out      visibleOutput
	tailed   map[*proc]bool
	// newMachine, when set, wipes checkpoint.dir and state.dir before
	// every run, as if each started on a machine of its own: all it
	// restores comes from checkpoint.storage.
	newMachine bool
}

// visibleOutput is what a reader of the sink sees: the committed files
// under sink.path, or what a read_committed consumer reads from the
// output topic.
type visibleOutput interface {
	// read returns what is visible now; a topic's reader may lag a moment
	// behind the last commit.
	read() (output, error)
	// readAll returns everything the sink made visible; call it once
	// nothing writes any more (the job stopped). A topic's reader reads up
	// to the end of every partition, and fails if a transaction is still
	// open there.
	readAll() (output, error)
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
	j.ckptDir = filepath.Join(j.dir, "checkpoints")
	if keep := os.Getenv("E2E_KEEP"); keep != "" {
		t.Cleanup(func() { _ = exec.Command("cp", "-r", j.dir, filepath.Join(keep, j.name)).Run() })
	}
	j.stateDir = filepath.Join(j.dir, "state")
	j.outDir = filepath.Join(j.dir, "out")
	if err := os.MkdirAll(j.outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	j.out = newOutputReader(j.outDir)
	if spec.KafkaSink != nil {
		j.outTopic, j.out = outputTopic(t, b, *spec.KafkaSink)
	}
	// Registered after TempDir and Topic, so it runs before they are removed.
	t.Cleanup(j.cleanup)
	j.validate()
	sinkDesc := "file sink " + j.outDir
	if spec.Sink != nil {
		sinkDesc = fmt.Sprintf("%v sink", spec.Sink["type"])
	}
	if spec.KafkaSink != nil {
		sinkDesc = "kafka sink to topic " + j.outTopic
	}
	t.Logf("job %s: topic %s (%d partitions), parallelism %d, checkpoint.interval %v, %s, broker %s",
		j.name, j.topic, spec.Partitions, spec.Parallelism, spec.Interval, sinkDesc, b)
	return j
}

// Directories a twin may share with its job.
const (
	shareCheckpointDir = "checkpoint.dir"
	shareStateDir      = "state.dir"
	shareSinkPath      = "sink.path"
)

// twin returns the same job as a second process of it would run: the same
// name, consumer group, topic and spec, with a working directory (configs,
// logs) of its own, and its own checkpoint.dir, state.dir and sink.path
// except those named in shared, which are j's. Its runs are its own, one
// at a time, and run beside j's; they are SIGKILLed when the test ends.
// With a Kafka sink, the twin writes to j's output topic (the same config)
// and reads it with j's reader.
func (j *job) twin(shared ...string) *job {
	j.t.Helper()
	spec := j.spec
	spec.Config = map[string]map[string]any{}
	for section, keys := range j.spec.Config {
		spec.Config[section] = maps.Clone(keys)
	}
	tw := &job{
		t:        j.t,
		bin:      j.bin,
		brokers:  j.brokers,
		spec:     spec,
		name:     j.name,
		topic:    j.topic,
		outTopic: j.outTopic,
		label:    "twin",
		dir:      j.t.TempDir(),
		tailed:   map[*proc]bool{},
	}
	tw.ckptDir = filepath.Join(tw.dir, "checkpoints")
	tw.stateDir = filepath.Join(tw.dir, "state")
	tw.outDir = filepath.Join(tw.dir, "out")
	for _, s := range shared {
		switch s {
		case shareCheckpointDir:
			tw.ckptDir = j.ckptDir
		case shareStateDir:
			tw.stateDir = j.stateDir
		case shareSinkPath:
			tw.outDir = j.outDir
		default:
			j.t.Fatalf("harness: twin cannot share %q", s)
		}
	}
	if err := os.MkdirAll(tw.outDir, 0o755); err != nil {
		j.t.Fatal(err)
	}
	tw.out = newOutputReader(tw.outDir)
	if j.outTopic != "" {
		tw.out = j.out
	}
	j.t.Cleanup(tw.cleanup)
	tw.validate()
	j.t.Logf("twin of job %s: sharing %v; checkpoint.dir %s, state.dir %s, sink.path %s", j.name, shared, tw.ckptDir, tw.stateDir, tw.outDir)
	return tw
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
	stateConfig := map[string]any{"dir": j.stateDir}
	if j.spec.FullSnapshotAfter != "" {
		stateConfig["full_snapshot_after"] = j.spec.FullSnapshotAfter
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
			"dir":      j.ckptDir,
		},
		"state": stateConfig,
		"pipeline": map[string]any{
			"parallelism": j.spec.Parallelism,
			"transforms":  transforms,
		},
		// Files span checkpoints and roll at the first checkpoint a second
		// after they opened: a SIGKILL mostly lands while files are open,
		// so restarts cut them back and resume them, and output still
		// becomes visible while the job runs.
		"sink": map[string]any{"type": "file", "path": j.outDir, "format": "jsonl", "roll_age": "1s"},
		"http": map[string]any{"addr": addr},
	}
	if j.outTopic != "" {
		cfg["sink"] = map[string]any{"type": "kafka", "topic": j.outTopic}
	}
	for section, keys := range j.spec.Config {
		m, ok := cfg[section].(map[string]any)
		if !ok {
			m = map[string]any{}
			cfg[section] = m
		}
		maps.Copy(m, keys)
	}
	if j.spec.Sink != nil {
		cfg["sink"] = j.spec.Sink
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
