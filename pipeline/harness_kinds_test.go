package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
)

// The harness's stand-ins for the outside world, registered as kinds so
// that the runtime builds them through its registries like any other:
//
//   - source.type scripted: partitions of records the script produces,
//     split over the readers like Kafka's (partition p to reader p mod P);
//     a reader's position is the next offset of each partition it owns. A
//     reader does nothing on its own: the script makes it read and emit.
//   - sink.type recording: a system that keeps pre-committed output
//     (durable, invisible) and committed output (visible), and prints every
//     call. It outlives attempts and crashes, as a real system would.
//
// Both find the world of the test running now in the package variable
// world: the harness tests run one at a time.

var world *harnessWorld

type harnessWorld struct {
	out        *strings.Builder // the trace of the command being run
	partitions [][]string       // keys of the records of each partition, by offset
	sink       recordingSink
	sourceDown string // why the scripted source cannot reach its system; "" when it can
}

func (w *harnessWorld) printf(format string, args ...any) { fmt.Fprintf(w.out, format+"\n", args...) }

func init() {
	source.Register(source.Kind{
		Name:    "scripted",
		Summary: "the deterministic harness's source (tests only)",
		Config:  func() any { return new(struct{}) },
		Open: func(_ context.Context, _ any, env source.Env) (source.Source, error) {
			s := newScriptedSource(env.Readers)
			for _, pos := range env.Restored {
				var m map[int]int
				if err := json.Unmarshal(pos, &m); err != nil {
					return nil, err
				}
				for p, n := range m {
					s.readers[p%env.Readers].next[p] = n
				}
			}
			return s, nil
		},
	})
	sink.Register(sink.Kind{
		Name:    "recording",
		Summary: "the deterministic harness's sink (tests only)",
		Config:  func() any { return new(struct{}) },
		New:     func(any, sink.Env) (sink.Sink, error) { return &world.sink, nil },
	})
}

type scriptedSource struct{ readers []*scriptedReader }

// newScriptedSource is a scripted source of n readers at no position.
func newScriptedSource(n int) *scriptedSource {
	s := &scriptedSource{readers: make([]*scriptedReader, n)}
	for i := range s.readers {
		s.readers[i] = &scriptedReader{index: i, of: n, next: map[int]int{}}
	}
	return s
}

func (s *scriptedSource) Readers() []source.Reader {
	out := make([]source.Reader, len(s.readers))
	for i, r := range s.readers {
		out[i] = r
	}
	return out
}
func (s *scriptedSource) Run(context.Context) error { return nil }
func (s *scriptedSource) Commit(context.Context, []source.Position) error {
	return nil
}
func (s *scriptedSource) Describe(ps []source.Position) string { return fmt.Sprintf("%s", ps) }
func (s *scriptedSource) Close()                               {}

// Owned: reader i owns the world's partitions p with p mod readers == i.
func (s *scriptedSource) Owned() []int {
	n := make([]int, len(s.readers))
	for p := range world.partitions {
		n[p%len(s.readers)]++
	}
	return n
}

// scriptedReader owns partitions p with p mod of == index. Its control
// requests (triggers, cancellations) wait until the script makes it emit.
type scriptedReader struct {
	index, of int
	next      map[int]int // partition -> next offset
	controls  []string    // "barrier N" or "cancel N", in order
	suspendAt checkpoint.ID
	suspended bool
}

func (r *scriptedReader) Run(ctx context.Context, _ source.Emitter) error {
	<-ctx.Done()
	return ctx.Err()
}
func (r *scriptedReader) Trigger(id checkpoint.ID, _ time.Time) {
	r.controls = append(r.controls, fmt.Sprintf("barrier %d", id))
}
func (r *scriptedReader) Suspend(id checkpoint.ID) { r.suspendAt = id }
func (r *scriptedReader) CancelBarrier(id checkpoint.ID) {
	r.controls = append(r.controls, fmt.Sprintf("cancel %d", id))
}

// read emits up to n records (n < 0: all) from its partitions, in
// partition order.
func (r *scriptedReader) read(ctx context.Context, em *emitter, n int) error {
	if r.suspended {
		world.printf("source-%d: suspended after the final checkpoint's barrier: nothing read", r.index)
		return nil
	}
	var b []record.Record
	var names []string
	for p := r.index; p < len(world.partitions); p += r.of {
		for off := r.next[p]; off < len(world.partitions[p]) && (n < 0 || len(b) < n); off++ {
			key := world.partitions[p][off]
			_, id, _ := strings.Cut(key, ":")
			if id == "" {
				id = key
			}
			b = append(b, record.Record{Topic: "t", Partition: int32(p), Offset: int64(off),
				Key: []byte(key), Value: fmt.Appendf(nil, `{"id":%q}`, id)})
			names = append(names, fmt.Sprintf("p%d@%d:%s", p, off, key))
			r.next[p] = off + 1
		}
	}
	if len(b) == 0 {
		world.printf("source-%d: nothing to read", r.index)
		return nil
	}
	world.printf("source-%d: read %s", r.index, strings.Join(names, " "))
	batch := record.NewBatch(len(b))
	return em.Records(ctx, append(batch, b...))
}

// control performs the waiting control requests: a barrier carries the
// reader's position.
func (r *scriptedReader) control(ctx context.Context, em *emitter) error {
	if len(r.controls) == 0 {
		world.printf("source-%d: no barrier to emit", r.index)
	}
	for _, c := range r.controls {
		var id checkpoint.ID
		if _, err := fmt.Sscanf(c, "barrier %d", &id); err == nil {
			pos, _ := json.Marshal(r.next)
			world.printf("source-%d: barrier %d at %s", r.index, id, pos)
			if err := em.Barrier(ctx, id, time.Time{}, pos); err != nil {
				return err
			}
			r.suspended = r.suspended || (r.suspendAt != 0 && id >= r.suspendAt)
			continue
		}
		_, _ = fmt.Sscanf(c, "cancel %d", &id)
		world.printf("source-%d: cancel %d", r.index, id)
		if err := em.Cancel(ctx, id); err != nil {
			return err
		}
	}
	r.controls = nil
	return nil
}

// recordingSink is the recording sink's system: durable pre-committed
// output by committable, and the visible output in commit order.
type recordingSink struct {
	pending   map[string][]string // committable name -> keys
	committed map[string]bool
	visible   []string
	writers   map[int]*recordingWriter
}

func committableName(c sink.Committable) string { return fmt.Sprintf("%d/w%d", c.Checkpoint, c.Writer) }

func (s *recordingSink) NewWriter(i int) (sink.Writer, error) {
	w := &recordingWriter{s: s, index: i}
	s.writers[i] = w
	return w, nil
}

func (s *recordingSink) Commit(_ context.Context, cs []sink.Committable) error {
	var done []string
	for _, c := range cs {
		name := committableName(c)
		switch keys, ok := s.pending[name]; {
		case s.committed[name]:
			done = append(done, name+" (again)")
		case !ok:
			world.printf("sink: commit %s: LOST", name)
			return fmt.Errorf("%w: %s", sink.ErrCommitLost, name)
		default:
			s.visible = append(s.visible, keys...)
			s.committed[name] = true
			delete(s.pending, name)
			done = append(done, fmt.Sprintf("%s%v", name, keys))
		}
	}
	world.printf("sink: commit %s", strings.Join(done, " "))
	return nil
}

func (s *recordingSink) Recover(ctx context.Context, restored []sink.Committable) error {
	if len(restored) > 0 {
		if err := s.Commit(ctx, restored); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.pending)) {
		world.printf("sink: discard %s%v", name, s.pending[name])
		delete(s.pending, name)
	}
	s.writers = map[int]*recordingWriter{}
	return nil
}

func (s *recordingSink) Close() error { return nil }

var _ sink.Auditor = (*recordingSink)(nil)

// CommittedAfter lists the committed committables of checkpoints after id.
func (s *recordingSink) CommittedAfter(_ context.Context, id checkpoint.ID) ([]string, error) {
	var out []string
	for name := range s.committed {
		var n checkpoint.ID
		if _, err := fmt.Sscanf(name, "%d/", &n); err == nil && n > id {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// recordingWriter keeps what was written since its last pre-commit, and
// the committables not yet known committed (carried forward).
type recordingWriter struct {
	s        *recordingSink
	index    int
	buf      []string
	carried  []sink.Committable
	failNext bool // the next PreCommit fails
	failLost bool // ... losing what it wrote (sink.ErrLost), not declining
}

var _ sink.AsyncPreCommitter = (*recordingWriter)(nil)

// PreCommitAsync is PreCommit, all of it in the part that runs
// asynchronously (as the Kafka and PostgreSQL sinks do most of theirs).
func (w *recordingWriter) PreCommitAsync(ctx context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	return func() ([]sink.Committable, error) { return w.PreCommit(ctx, id) }, nil
}

func (w *recordingWriter) Write(_ context.Context, r *record.Record) error {
	w.buf = append(w.buf, string(r.Key))
	return nil
}

func (w *recordingWriter) PreCommit(_ context.Context, id checkpoint.ID) ([]sink.Committable, error) {
	if w.failNext && w.failLost {
		w.failNext, w.failLost = false, false
		world.printf("w%d: pre-commit %d fails; loses %v", w.index, id, w.buf)
		w.buf = nil
		return nil, fmt.Errorf("%w: injected", sink.ErrLost)
	}
	if w.failNext {
		w.failNext = false
		world.printf("w%d: pre-commit %d fails; keeps %v", w.index, id, w.buf)
		return nil, fmt.Errorf("%w: injected", sink.ErrNotDurable)
	}
	if len(w.buf) > 0 {
		c := sink.Committable{Checkpoint: id, Writer: w.index}
		w.s.pending[committableName(c)] = w.buf
		w.carried = append(w.carried, c)
		w.buf = nil
	}
	var names []string
	for _, c := range w.carried {
		names = append(names, committableName(c))
	}
	world.printf("w%d: pre-commit %d -> %v", w.index, id, names)
	return slices.Clone(w.carried), nil
}

func (w *recordingWriter) Committed(id checkpoint.ID) {
	w.carried = slices.DeleteFunc(w.carried, func(c sink.Committable) bool { return c.Checkpoint <= id })
}

func (w *recordingWriter) Close() error { return nil }

var _ sink.InputEnder = (*recordingWriter)(nil)

// EndInput is told before the final checkpoint's pre-commit.
func (w *recordingWriter) EndInput() { world.printf("w%d: end of input", w.index) }

var _ source.HealthReporter = (*scriptedSource)(nil)

// Health reports what the script said with source-down.
func (s *scriptedSource) Health() error {
	if world.sourceDown != "" {
		return fmt.Errorf("%s", world.sourceDown)
	}
	return nil
}
