package pipeline

import (
	"context"

	"fmt"

	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	_ "github.com/connector-dev/connector/internal/builtin"
	"github.com/connector-dev/connector/internal/idtest"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/internal/syncbuf"
	"github.com/connector-dev/connector/sink/file"
	"github.com/connector-dev/connector/source/kafka"
)

// jobOpts vary the test job: parallelism, transforms (YAML flow items),
// extra checkpoint and pipeline keys (YAML flow-map entries, e.g. "timeout: 1s").
type jobOpts struct {
	parallelism int
	transforms  string
	checkpoint  string
	pipeline    string
}

// jobConfig is a file-sink job over topic with everything under dir.
func jobConfig(t *testing.T, b kafkatest.Brokers, topic, dir string, o jobOpts) *config.Job {
	t.Helper()
	if o.parallelism == 0 {
		o.parallelism = 1
	}
	if o.checkpoint == "" {
		o.checkpoint = "timeout: 10s"
	}
	if o.pipeline != "" {
		o.pipeline = ", " + o.pipeline
	}
	y := fmt.Sprintf(`
name: test-job
kafka: {brokers: [%q]}
source: {topics: [%q], group: %q}
checkpoint: {interval: 100ms, dir: %q, %s}
state: {dir: %q}
pipeline: {parallelism: %d, transforms: [%s]%s}
sink: {type: file, path: %q, roll_age: 300ms}
http: {addr: "127.0.0.1:0"}
restart: {initial_backoff: 50ms, max_backoff: 200ms}
`, strings.Join(b.Addrs, ","), topic, topic+"-group", filepath.Join(dir, "chk"), o.checkpoint, filepath.Join(dir, "state"),
		o.parallelism, o.transforms, o.pipeline, filepath.Join(dir, "out"))
	j, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return j
}

func produceIDs(t *testing.T, b kafkatest.Brokers, topic string, from, to int) {
	t.Helper()
	idtest.Produce(t, b, topic, from, to)
}

// visibleIDs counts every id in the committed (visible) output files.
func visibleIDs(t *testing.T, dir string) map[int]int { t.Helper(); return idtest.Visible(t, dir) }

func checkOnce(t *testing.T, ids map[int]int, n int) { t.Helper(); idtest.CheckOnce(t, ids, n) }

type running struct {
	cancel context.CancelFunc
	done   chan error
	job    *Job
	reg    *prometheus.Registry
	logs   *syncbuf.Buffer
}

// counter is the value of the job's counter name (0 before it counted).
func (r *running) counter(name string) uint64 {
	s, _ := metrics.Gather(r.reg)
	v, _ := s.Sum(name)
	return uint64(v)
}

func start(t *testing.T, cfg *config.Job) *running {
	t.Helper()
	return startWith(t, cfg, Options{})
}

// startWith runs the job in the background with opts (a test logger and
// fast partition discovery are filled in).
func startWith(t *testing.T, cfg *config.Job, opts Options) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncbuf.Buffer{}
	opts.Log = zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), logs)).Level(zerolog.InfoLevel)
	opts.DiscoverEvery = 500 * time.Millisecond
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	j := New(cfg, opts)
	r := &running{cancel: cancel, done: make(chan error, 1), job: j, reg: opts.Registry, logs: logs}
	go func() { r.done <- j.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// stop asks for a clean stop and waits for Run to return.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("job stopped with %v, want a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("job did not stop within 30s")
	}
}

func waitAll(t *testing.T, out string, n int) map[int]int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ids := visibleIDs(t, out)
		if len(ids) >= n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d ids visible after 60s", len(ids), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestJobWritesEveryRecordOnceAcrossACleanRestart(t *testing.T) {
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", p), func(t *testing.T) {
			b := kafkatest.Cluster(t)
			topic := kafkatest.Topic(t, b, 4)
			dir := t.TempDir()
			cfg := jobConfig(t, b, topic, dir, jobOpts{parallelism: p})
			produceIDs(t, b, topic, 0, 3000)
			r := start(t, cfg)
			waitAll(t, outDir(cfg), 3000)
			r.stop(t)
			produceIDs(t, b, topic, 3000, 5000)
			r = start(t, cfg)
			waitAll(t, outDir(cfg), 5000)
			r.stop(t)
			checkOnce(t, visibleIDs(t, outDir(cfg)), 5000)
			checkGroupAtEnd(t, b, topic, cfg.Source.Config.(*kafka.Config).Group)
		})
	}
}

func TestDedupStateSurvivesRestart(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{parallelism: 2, transforms: "{type: dedup, key: id, ttl: 1h}"})
	produceIDs(t, b, topic, 0, 1000)
	r := start(t, cfg)
	waitAll(t, outDir(cfg), 1000)
	r.stop(t)
	produceIDs(t, b, topic, 500, 1500) // 500 duplicates of ids seen before the restart
	r = start(t, cfg)
	waitAll(t, outDir(cfg), 1500)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), 1500)
}

// outDir is the file sink's directory of a test job.
func outDir(cfg *config.Job) string { return cfg.Sink.Config.(*file.Config).Path }
