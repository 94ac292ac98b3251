package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/checkpoint"
)

// command is one harness command; needsAttempt commands run against the
// attempt started by start or restart.
type command struct {
	needsAttempt bool
	run          func(h *harness, t *testing.T, d *datadriven.TestData) error
}

var commands = map[string]command{
	"job":               {run: cmdJob},
	"start":             {run: cmdStart},
	"restart":           {run: cmdRestart},
	"produce":           {run: cmdProduce},
	"read":              {needsAttempt: true, run: cmdRead},
	"barrier":           {needsAttempt: true, run: cmdBarrier},
	"trigger":           {needsAttempt: true, run: cmdTrigger},
	"tick":              {needsAttempt: true, run: cmdTick},
	"deliver":           {needsAttempt: true, run: cmdDeliver},
	"events":            {needsAttempt: true, run: cmdEvents},
	"fail-precommit":    {needsAttempt: true, run: cmdFailPreCommit},
	"persist-fail":      {run: cmdPersistFail},
	"crash":             {run: cmdCrash},
	"stop":              {needsAttempt: true, run: cmdStop},
	"status":            {needsAttempt: true, run: cmdStatus},
	"sink":              {run: cmdSink},
	"damage":            {run: cmdDamage},
	"ready":             {needsAttempt: true, run: cmdReady},
	"source-down":       {run: cmdSourceDown},
	"lose-state":        {run: cmdLoseState},
	"reset-checkpoints": {run: cmdResetCheckpoints},
}

// job [parallelism=N] [max-parallelism=N] [dedup] [dedup-key=FIELD] [key-by=FIELD] [route=auto|key|partition] [tolerable=N] [max-concurrent=N] [timeout=D] [on-unrestorable=fail|fall_back]
//
// Sets the job that the next start or restart runs. Defaults: parallelism
// 1, max-parallelism 8, no transform (dedup: a dedup on the record's id, or
// on dedup-key),
// key-by unset (records keyed by their Kafka key), route key (records
// shuffled by key group: the traces written before pipeline.route have
// every reader send to every worker; route.txt is the other routes),
// tolerable 5, max-concurrent 1, timeout 1m, on-unrestorable fail. Prints
// nothing.
func cmdJob(h *harness, t *testing.T, d *datadriven.TestData) error {
	d.MaybeScanArgs(t, "on-unrestorable", &h.opts.onUnrestorable)
	d.MaybeScanArgs(t, "parallelism", &h.opts.parallelism)
	d.MaybeScanArgs(t, "max-parallelism", &h.opts.maxParallelism)
	d.MaybeScanArgs(t, "tolerable", &h.opts.tolerable)
	d.MaybeScanArgs(t, "max-concurrent", &h.opts.maxConcurrent)
	var timeout string
	if d.MaybeScanArgs(t, "timeout", &timeout); timeout != "" {
		h.opts.timeout = parseDuration(t, timeout)
	}
	h.opts.dedup = d.HasArg("dedup")
	h.opts.dedupKey = "id"
	d.MaybeScanArgs(t, "dedup-key", &h.opts.dedupKey)
	h.opts.keyBy = ""
	d.MaybeScanArgs(t, "key-by", &h.opts.keyBy)
	h.opts.route = "key"
	d.MaybeScanArgs(t, "route", &h.opts.route)
	return nil
}

// start
//
// Starts the job's first attempt: the restore phase (checkpoint store,
// sink recovery, keyed state, source positions) and the graph. Prints what
// the sink recovered.
func cmdStart(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	return h.startAttempt()
}

// restart [parallelism=N]
//
// Starts a new attempt after a crash (or over a running one, which is
// crashed first), optionally with another parallelism: the job restores
// the last completed checkpoint. Prints the sink's recovery and the
// checkpoint restored.
func cmdRestart(h *harness, t *testing.T, d *datadriven.TestData) error {
	h.crash()
	d.MaybeScanArgs(t, "parallelism", &h.opts.parallelism)
	if err := h.startAttempt(); err != nil {
		return err
	}
	if h.r.md == nil {
		world.printf("restored: no checkpoint")
	} else {
		world.printf("restored: checkpoint %d, positions %s", h.r.md.ID, h.r.source.Describe(h.r.positions))
	}
	for w, st := range h.r.stores {
		if st != nil {
			world.printf("worker-%d: key groups %s", w, st.KeyGroups())
		}
	}
	return nil
}

// produce partition=P
// <keys, separated by spaces>
//
// Appends records to a partition of the scripted source (4 partitions);
// each record's key is one of the keys and its value {"id": key}, or
// {"id": ID} for a key written K:ID (records with the same id and
// different keys).
func cmdProduce(_ *harness, t *testing.T, d *datadriven.TestData) error {
	var p int
	d.ScanArgs(t, "partition", &p)
	world.partitions[p] = append(world.partitions[p], strings.Fields(d.Input)...)
	return nil
}

// read reader=R [n=N]
//
// Source reader R reads up to N records (default all there are) from its
// partitions and emits them, split by key group, to the workers' channels.
func cmdRead(h *harness, t *testing.T, d *datadriven.TestData) error {
	var r int
	n := -1
	d.ScanArgs(t, "reader", &r)
	d.MaybeScanArgs(t, "n", &n)
	return h.reader(r).read(h.ctx, h.g.emitters[r], n)
}

// barrier reader=R
//
// Source reader R performs the requests the driver left it: it emits each
// triggered barrier (acknowledging its position) and each cancellation
// marker, in order, on every channel.
func cmdBarrier(h *harness, t *testing.T, d *datadriven.TestData) error {
	var r int
	d.ScanArgs(t, "reader", &r)
	return h.reader(r).control(h.ctx, h.g.emitters[r])
}

func (h *harness) reader(i int) *scriptedReader { return h.g.readers[i].(*scriptedReader) }

// trigger
//
// Asks the Coordinator for a checkpoint now (TriggerNow) and prints the
// driver's actions.
func cmdTrigger(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	return h.step(checkpoint.TriggerNow{})
}

// tick D
//
// Moves the clock to D after the start of the script and ticks the
// Coordinator (timeouts). Prints the driver's actions.
func cmdTick(h *harness, t *testing.T, d *datadriven.TestData) error {
	if len(d.CmdArgs) != 1 {
		t.Fatalf("%s: usage: tick D", d.Pos)
	}
	h.now = t0.Add(parseDuration(t, d.CmdArgs[0].Key))
	return h.step(checkpoint.Tick{Now: h.now})
}

// step feeds the driver one event, turning a crash asked for with
// events crash-before=... into the end of the attempt.
func (h *harness) step(ev checkpoint.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != errCrash {
				panic(r)
			}
			h.crash()
			world.printf("crashed")
			err = nil
		}
	}()
	h.g.driver.step(h.ctx, ev)
	if _, tick := ev.(checkpoint.Tick); tick && h.final != 0 && h.g.driver.failed == nil && !h.g.driver.stopped(h.final) {
		h.g.driver.retryFinal(h.ctx, h.final) // as loop does after each tick
	}
	if f := h.g.driver.failed; f != nil {
		world.printf("job failed: %v", f)
	}
	if h.final != 0 && h.g.driver.stopped(h.final) {
		world.printf("stopped: final checkpoint %d completed", h.final)
	}
	return nil
}

// deliver worker=W [channel=C] [n=N]
//
// Worker W first takes the aborts the driver left it, then up to N
// elements (default all there are) from its input channels, channel C
// only if given, skipping the channels its aligner blocks. Prints each
// element and what the worker wrote, dropped or snapshotted.
func cmdDeliver(h *harness, t *testing.T, d *datadriven.TestData) error {
	var w int
	ch, n := -1, -1
	d.ScanArgs(t, "worker", &w)
	d.MaybeScanArgs(t, "channel", &ch)
	d.MaybeScanArgs(t, "n", &n)
	wk := h.g.workers[w]
	for {
		select {
		case id := <-wk.aborts:
			world.printf("worker-%d: abort %d", w, id)
			if _, err := wk.abortAligning(h.ctx, id); err != nil {
				return err
			}
			continue
		default:
		}
		break
	}
	for n != 0 {
		c, el, ok := h.next(wk, ch)
		if !ok {
			return nil
		}
		n--
		if err := h.deliverOne(wk, c, el); err != nil {
			return err
		}
	}
	return nil
}

// next takes an element from the first unblocked channel of wk that has one.
func (h *harness) next(wk *worker, only int) (int, element, bool) {
	for c, in := range wk.ins {
		if (only >= 0 && c != only) || wk.aligner.Blocked(c) {
			continue
		}
		select {
		case el := <-in:
			return c, el, true
		default:
		}
	}
	return 0, element{}, false
}

func (h *harness) deliverOne(wk *worker, c int, el element) error {
	before := fmt.Sprint(wk.aligner.Aligning())
	wr := world.sink.writers[wk.index]
	written := len(wr.buf)
	var what string
	var keys []string
	switch el.Kind {
	case checkpoint.RecordElement:
		for _, r := range el.Record {
			keys = append(keys, string(r.Key))
		}
		what = fmt.Sprintf("records %v", keys)
	case checkpoint.BarrierElement:
		what = fmt.Sprintf("barrier %d", el.Barrier.ID)
	case checkpoint.CancelElement:
		what = fmt.Sprintf("cancel %d", el.Cancel.ID)
	}
	world.printf("worker-%d <- source-%d: %s", wk.index, c, what)
	if _, err := wk.deliver(h.ctx, c, el); err != nil {
		return err
	}
	if el.Kind == checkpoint.RecordElement {
		wrote := wr.buf[min(written, len(wr.buf)):]
		if len(wrote) != len(keys) {
			world.printf("  wrote %v, dropped %d", wrote, len(keys)-len(wrote))
		}
	}
	if after := fmt.Sprint(wk.aligner.Aligning()); after != before {
		world.printf("  aligning %s", after)
	}
	return nil
}

// events [crash-before=KIND]
//
// The driver takes every event the tasks sent it (acks, declines, task
// failures), in order, and performs the Coordinator's actions. With
// crash-before, the process crashes just before the first action of that
// kind (trigger, persist, notify-complete, abort, discard).
func cmdEvents(h *harness, t *testing.T, d *datadriven.TestData) error {
	d.MaybeScanArgs(t, "crash-before", &h.crashBefore)
	for h.a != nil {
		select {
		case ev := <-h.g.events:
			world.printf("%s", describeEvent(ev))
			if err := h.step(ev); err != nil {
				return err
			}
		default:
			h.crashBefore = ""
			return nil
		}
	}
	return nil
}

func describeEvent(ev checkpoint.Event) string {
	switch e := ev.(type) {
	case checkpoint.Ack:
		return fmt.Sprintf("ack %s %d", e.Task, e.ID)
	case checkpoint.Decline:
		return fmt.Sprintf("decline %s %d: %v", e.Task, e.ID, e.Reason)
	case checkpoint.TaskFailed:
		return fmt.Sprintf("task-failed %s: %v", e.Task, e.Err)
	}
	return fmt.Sprintf("%T", ev)
}

// fail-precommit worker=W [lost]
//
// The next pre-commit of worker W's sink writer fails: the worker declines
// the checkpoint and keeps what it wrote; with lost, what it wrote is gone
// (sink.ErrLost, in the pre-commit's asynchronous part) and the task fails.
func cmdFailPreCommit(_ *harness, t *testing.T, d *datadriven.TestData) error {
	var w int
	d.ScanArgs(t, "worker", &w)
	world.sink.writers[w].failNext = true
	world.sink.writers[w].failLost = d.HasArg("lost")
	return nil
}

// persist-fail
//
// The next write of checkpoint metadata fails (MetadataPersistFailed).
func cmdPersistFail(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	h.faults.persist.Store(true)
	return nil
}

// crash
//
// The process dies (SIGKILL): what was not synced is lost; the recording
// sink keeps what it made durable.
func cmdCrash(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	h.crash()
	return nil
}

// stop
//
// SIGTERM: the driver triggers a final checkpoint; "stopped" is printed
// once it (or a later one) completed.
func cmdStop(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	h.final = h.g.driver.requestStop(h.ctx)
	world.printf("stopping: final checkpoint %d", h.final)
	return nil
}

// status
//
// Prints the Coordinator's status.
func cmdStatus(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	st := h.g.driver.coord.Status()
	world.printf("pending=%v last-completed=%d next-id=%d failures=%d", st.Pending, st.LastCompleted, st.NextID, st.ConsecutiveFailures)
	return nil
}

// sink
//
// Prints the recording sink: what is visible (committed, in commit order)
// and what is pre-committed but not visible.
func cmdSink(_ *harness, _ *testing.T, _ *datadriven.TestData) error {
	s := &world.sink
	world.printf("visible: %v", s.visible)
	for _, name := range slices.Sorted(maps.Keys(s.pending)) {
		world.printf("pending %s: %v", name, s.pending[name])
	}
	dups := map[string]int{}
	for _, k := range s.visible {
		dups[k]++
	}
	for _, k := range slices.Sorted(maps.Keys(dups)) {
		if dups[k] > 1 {
			world.printf("DUPLICATE %s x%d", k, dups[k])
		}
	}
	return nil
}

func parseDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(errors.Join(fmt.Errorf("bad duration %q", s), err))
	}
	return d
}

// damage id=N
//
// Truncates checkpoint N's metadata file, as a torn write or a bad disk
// would (the next start cannot restore it).
func cmdDamage(h *harness, t *testing.T, d *datadriven.TestData) error {
	var id int
	d.ScanArgs(t, "id", &id)
	name := "/chk/" + checkpoint.ID(id).Name() + ".meta"
	f, err := h.mem.Create(name, vfs.WriteCategoryUnspecified) // empties it
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write([]byte("CONNCKPT")); err != nil {
		return err
	}
	return f.Sync()
}

// lose-state
//
// Deletes the changelogs under the state root (lost by an operator, say):
// every checkpoint that lists one can no longer be restored.
func cmdLoseState(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	names, err := h.mem.List("/state")
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, dir := range names {
		if _, ok := checkpoint.ParseName(dir); !ok {
			continue
		}
		files, _ := h.mem.List("/state/" + dir)
		for _, f := range files {
			if strings.HasSuffix(f, ".changelog") {
				world.printf("removed /state/%s/%s", dir, f)
				if err := h.mem.Remove("/state/" + dir + "/" + f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// reset-checkpoints
//
// Deletes every file of the checkpoint dir and the state root, as an
// operator starting the job afresh (or a new pod without its volume)
// would; the sink keeps its output.
func cmdResetCheckpoints(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	for _, dir := range []string{"/chk", "/state"} {
		if err := h.mem.RemoveAll(dir); err != nil {
			return err
		}
		if err := h.mem.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	world.printf("removed /chk and /state")
	return nil
}

// ready
//
// Prints what /readyz answers.
func cmdReady(h *harness, _ *testing.T, _ *datadriven.TestData) error {
	if err := h.a.j.Ready(); err != nil {
		world.printf("not ready: %v", err)
		return nil
	}
	world.printf("ready")
	return nil
}

// source-down [why...]
//
// The scripted source reports it cannot reach its system (why), or, with
// no argument, that it can again.
func cmdSourceDown(_ *harness, _ *testing.T, d *datadriven.TestData) error {
	var words []string
	for _, a := range d.CmdArgs {
		words = append(words, a.String())
	}
	world.sourceDown = strings.Join(words, " ")
	return nil
}
