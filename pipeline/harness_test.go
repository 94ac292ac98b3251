package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
)

// TestRuntimeTraces drives the whole runtime, deterministically and without
// Kafka, through the scripts in testdata/runtime: one Coordinator (through
// the real driver), P aligned workers with their transforms, keyed state
// (Pebble on an in-memory filesystem) and sink writers, the real checkpoint
// store, scripted source readers and a recording sink (harness_kinds_test.go).
// Nothing runs on its own: no task goroutine, no ticker; every step is a
// command, so every trace is the same on every run. Rewrite the expected
// traces with -rewrite after a deliberate change. The commands are in
// harness_cmds_test.go, each with its usage.
func TestRuntimeTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/runtime", func(t *testing.T, path string) {
		h := newHarness(t)
		defer h.close()
		datadriven.RunTest(t, path, h.handle)
	})
}

// harness is one script's environment: the job it runs, the filesystem its
// checkpoints and state live on, and the attempt running now.
type harness struct {
	t      *testing.T
	mem    *vfs.MemFS // crashable: a crash keeps only what was synced
	faults *faultSwitch
	opts   harnessJob
	now    time.Time

	a     *attempt // nil before start and after a crash
	r     *restoredJob
	g     *graph
	ctx   context.Context
	final checkpoint.ID // the final checkpoint's id once stop was asked; 0 before
	// crashBefore names an action kind ("notify-complete"); the driver
	// crashes just before performing the next one.
	crashBefore string
}

// harnessJob is what the next start or restart runs.
type harnessJob struct {
	parallelism, maxParallelism, tolerable, maxConcurrent int
	dedup                                                 bool
	dedupKey, keyBy, route                                string
	timeout                                               time.Duration
	onUnrestorable                                        string
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(t *testing.T) *harness {
	world = &harnessWorld{out: &strings.Builder{}, partitions: make([][]string, 4),
		sink: recordingSink{pending: map[string][]string{}, committed: map[string]bool{}}}
	return &harness{t: t, mem: vfs.NewCrashableMem(), faults: &faultSwitch{}, now: t0, ctx: context.Background(),
		opts: harnessJob{parallelism: 1, maxParallelism: 8, tolerable: 5, maxConcurrent: 1, timeout: time.Minute, onUnrestorable: "fail", route: "key"}}
}

func (h *harness) close() {
	if h.a != nil {
		h.a.close()
	}
}

// handle runs one command and returns its trace.
func (h *harness) handle(t *testing.T, d *datadriven.TestData) string {
	world.out.Reset()
	cmd, ok := commands[d.Cmd]
	if !ok {
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	if cmd.needsAttempt && h.a == nil {
		t.Fatalf("%s: %s needs a running attempt (start or restart first)", d.Pos, d.Cmd)
	}
	if err := cmd.run(h, t, d); err != nil {
		world.printf("error: %v", err)
	}
	if world.out.Len() == 0 {
		return "ok\n"
	}
	return world.out.String()
}

// config is the job file the next attempt loads.
func (h *harness) config() *config.Job {
	o := h.opts
	transforms := ""
	if o.dedup {
		transforms = fmt.Sprintf("{type: dedup, key: %s, ttl: 1h}", o.dedupKey)
	}
	y := fmt.Sprintf(`
name: harness
kafka: {brokers: ["unused:9092"]}
source: {type: scripted}
checkpoint: {interval: 1h, initial_delay: 1h, timeout: %s, tolerable_failures: %d, max_concurrent: %d, on_unrestorable: %s, dir: /chk}
state: {dir: /state}
pipeline: {parallelism: %d, max_parallelism: %d, key_by: %q, route: %s, channel_capacity: 1000000, transforms: [%s]}
sink: {type: recording}
`, o.timeout, o.tolerable, o.maxConcurrent, o.onUnrestorable, o.parallelism, o.maxParallelism, o.keyBy, o.route, transforms)
	j, err := config.Parse("harness.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		h.t.Fatalf("harness config: %v", err)
	}
	return j
}

// startAttempt runs the restore and build phases of a new attempt, as the
// job's Run loop does after a start or a failure, and starts the
// Coordinator's clock.
func (h *harness) startAttempt() error {
	job := New(h.config(), Options{FS: errorfs.Wrap(h.mem, h.faults), Log: zerolog.Nop()})
	job.spawn = func(f func()) { f() }     // a snapshot's asynchronous part runs at once
	job.rand = func() float64 { return 1 } // the first checkpoint is due after initial_delay (1h)
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
	if h.opts.route != "key" {
		world.printf("route: %s (%s)", h.g.routing, h.g.routing.why)
	}
	job.setRunning(r.source, h.g.driver) // as attempt.run does once the tasks run
	h.g.driver.observe = h.observe
	h.g.driver.clock = func() time.Time { return h.now }
	h.g.driver.step(h.ctx, checkpoint.Tick{Now: h.now})
	return nil
}

// errCrash unwinds the driver when a crash was asked before an action.
var errCrash = errors.New("harness: crash")

func (h *harness) observe(a checkpoint.Action) {
	name, _, _ := strings.Cut(fmt.Sprint(a), " ")
	if h.crashBefore != "" && strings.TrimSuffix(name, ":") == h.crashBefore {
		world.printf("  crash before %s", a)
		h.crashBefore = ""
		panic(errCrash)
	}
	world.printf("  -> %s", describeAction(a))
}

func describeAction(a checkpoint.Action) string {
	if t, ok := a.(checkpoint.TriggerSources); ok {
		return fmt.Sprintf("trigger %d", t.ID)
	}
	return fmt.Sprint(a)
}

// crash abandons the running attempt as a SIGKILL would: the filesystem
// keeps only what was synced; the recording sink keeps its durable state.
func (h *harness) crash() {
	if h.a == nil {
		return
	}
	h.mem = h.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	h.a.close() // releases memory; the clone no longer sees the old files
	h.a, h.r, h.g = nil, nil, nil
}

// faultSwitch fails the next metadata write when armed (persist-fail).
type faultSwitch struct{ persist atomic.Bool }

func (f *faultSwitch) MaybeError(op errorfs.Op) error {
	if op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".meta.tmp") && f.persist.CompareAndSwap(true, false) {
		return errorfs.ErrInjected
	}
	return nil
}

func (f *faultSwitch) String() string { return "harness faults" }
