package s3

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

// object is an open object of the writer: size bytes so far, of which the
// first cut went into parts 1..next-1 and the rest are in buf. ff is its
// format: it turns records into the bytes appended to buf (a Parquet file
// buffers rows and appends a row group at a time).
type object struct {
	up     *upload
	ff     filefmt.File
	bucket string // its bucket by path_template ("": none)
	used   uint64 // the writer's count of Writes at its last one (max_open_files)
	size   int64
	cut    int64
	next   int
	buf    []byte
}

// writer is one worker's writer of the s3 sink. Write, BeginBatch,
// EndInput, PreCommit, PreCommitAsync and Close belong to one goroutine;
// Committed may be called from any. Uploads run on its uploader goroutine.
type writer struct {
	s           *Sink
	instance    int
	log         zerolog.Logger
	up          *uploader
	buckets     *pathtmpl.Expander // nil: no path_template
	lastBarrier checkpoint.ID      // names of new objects start after it
	seq         int                // objects opened since lastBarrier
	open        map[string]*object // the open objects, by bucket
	// last is the object the last Write wrote to while it is open (nil
	// else): the next Write to its bucket takes it without the map, whose
	// lookup was 2.4% of a Parquet drain's CPU.
	last       *object
	writes     uint64    // Writes so far: the objects' last use
	batchAt    time.Time // the clock at BeginBatch; zero: read it per Write
	ended      bool      // EndInput: the next pre-commit rolls
	closed     bool
	maxBacklog int64
	// written counts the bytes appended to the objects, for the sink's
	// Stats. Each writer has its own: one counter shared by every writer,
	// added to at each record, was 2.4% of a Parquet drain's CPU (its
	// cache line went from core to core).
	written atomic.Uint64

	mu      sync.Mutex
	carried []sink.Committable // handed out by PreCommit, not yet Committed
}

var (
	_ sink.Writer            = (*writer)(nil)
	_ sink.AsyncPreCommitter = (*writer)(nil)
	_ sink.Batcher           = (*writer)(nil)
	_ sink.InputEnder        = (*writer)(nil)
)

func newWriter(s *Sink, instance int, lastBarrier checkpoint.ID, rs []*resumed) *writer {
	log := s.log.With().Int("writer", instance).Logger()
	w := &writer{
		s:           s,
		instance:    instance,
		log:         log,
		up:          newUploader(s, instance, log),
		lastBarrier: lastBarrier,
		open:        make(map[string]*object, len(rs)),
		maxBacklog:  max(64<<20, 4*int64(s.cfg.PartSize)),
	}
	if s.tmpl != nil {
		w.buckets = s.tmpl.NewExpander()
	}
	for _, r := range rs {
		bucket := s.names.bucket(r.up.key)
		w.open[bucket] = &object{up: r.up, ff: r.ff, bucket: bucket, size: r.size, cut: partsSize(r.up.parts), next: len(r.up.parts) + 1, buf: r.tail}
		w.log.Info().Str("key", r.up.key).Int64("size", r.size).Int("parts", len(r.up.parts)).Msg("resuming the open object")
	}
	return w
}

// Write appends r's value to the open object of its bucket, opening one
// if needed (after rolling the least recently written one, if
// max_open_files are open), and hands full parts to the uploader (waiting
// while one part is queued already). The object rolls by age and by size
// (its bytes and the rows its format buffers). A value the format cannot
// hold is refused with sink.ErrBadRecord and changes nothing: the object
// goes on.
func (w *writer) Write(ctx context.Context, r *record.Record) error {
	if w.closed {
		return sink.ErrClosed
	}
	now := w.batchAt
	if now.IsZero() {
		now = w.s.cfg.Now()
	}
	var bucket []byte
	if w.buckets != nil {
		bucket = w.buckets.Expand(r.Timestamp, r.Value)
	}
	o := w.last
	if o == nil || o.bucket != string(bucket) {
		o = w.open[string(bucket)]
	}
	// Old, or full since a pre-commit flushed its buffered rows.
	if o != nil && (w.old(o, now) || o.size >= int64(w.s.cfg.RollSize)) {
		if err := w.roll(ctx, o); err != nil {
			return err
		}
		o = nil
	}
	opened := o == nil
	if opened {
		var err error
		if o, err = w.openObject(ctx, string(bucket), now); err != nil {
			return err
		}
	}
	w.writes++
	o.used = w.writes
	before := len(o.buf)
	var err error
	o.buf, err = o.ff.Append(o.buf, r.Value)
	if err == nil {
		w.grew(o, before)
	}
	if opened && o.size == 0 && o.ff.Buffered() == 0 {
		// Nothing taken (a bad record, an empty raw value): no object.
		w.forget(o)
		w.seq--
		o = nil
	}
	w.last = o
	if err != nil {
		return fmt.Errorf("s3 sink: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if o == nil {
		return nil
	}
	// The object's bytes count, not the rows a format buffers (unknown
	// and compressed until flushed): a Parquet object rolls once its row
	// groups reach roll_size, so objects are at least roll_size.
	if o.size >= int64(w.s.cfg.RollSize) {
		err = w.roll(ctx, o)
	} else {
		err = w.cutParts(ctx, o)
	}
	if err != nil {
		return err
	}
	if held := w.up.held.Load(); held > w.maxBacklog {
		return fmt.Errorf("s3 sink writer %d: %w: %d bytes not uploaded", w.instance, sink.ErrNotDurable, held)
	}
	return nil
}

// old reports whether o reached roll_age at now.
func (w *writer) old(o *object, now time.Time) bool {
	return w.s.cfg.RollAge > 0 && now.Sub(o.up.opened) >= w.s.cfg.RollAge
}

// BeginBatch reads the clock for the Writes that follow, until the next
// BeginBatch.
func (w *writer) BeginBatch() { w.batchAt = w.s.cfg.Now() }

// EndInput makes the next pre-commit roll the open objects: the final
// checkpoint makes everything visible.
func (w *writer) EndInput() { w.ended = true }

// openObject starts the next object, in bucket: F is one more than the
// last barrier. While max_open_files are open, it first rolls the least
// recently written one.
func (w *writer) openObject(ctx context.Context, bucket string, now time.Time) (*object, error) {
	for len(w.open) >= w.s.cfg.MaxOpenFiles {
		var lru *object
		for _, o := range w.open {
			if lru == nil || o.used < lru.used {
				lru = o
			}
		}
		if err := w.roll(ctx, lru); err != nil {
			return nil, err
		}
	}
	ff, err := filefmt.New(w.s.cfg.Format, w.s.cfg.Parquet)
	if err != nil {
		return nil, fmt.Errorf("s3 sink writer %d: %w", w.instance, err)
	}
	first := w.lastBarrier + 1
	key, base := w.s.names.objectKey(bucket, first, w.instance, w.seq)
	w.seq++
	o := &object{
		up:     &upload{key: key, base: base, first: first, writer: w.instance, opened: now, token: newToken()},
		ff:     ff,
		bucket: bucket,
		next:   1,
	}
	w.open[bucket] = o
	return o, nil
}

// grew counts the bytes the format appended to o.buf after before (none,
// mostly, for a format that buffers rows).
func (w *writer) grew(o *object, before int) {
	if n := len(o.buf) - before; n != 0 {
		o.size += int64(n)
		w.written.Add(uint64(n))
	}
}

// cutParts hands o's buffered bytes over as parts once part_size of them
// are buffered: part_size bytes a part while twice that is buffered (a
// Parquet row group comes at once), then all that is left, so a part
// holds less than twice part_size.
func (w *writer) cutParts(ctx context.Context, o *object) error {
	p := int(w.s.cfg.PartSize)
	for len(o.buf) >= 2*p {
		if err := w.cutPart(ctx, o, p); err != nil {
			return err
		}
	}
	if n := len(o.buf); n >= p {
		return w.cutPart(ctx, o, n)
	}
	return nil
}

// cutPart hands the first n buffered bytes of o over as its next part. The
// uploader reads them while the writer appends after them, never into them.
//
// The bytes after the part go to a buffer of the sink's pool, which holds
// a part and more: appending never regrows it (regrowing a 16 MiB buffer
// by append copied every byte about five times and was 27% of the jsonl
// drain's CPU, bench/RESULTS.md), and the part's buffer returns to the
// pool once uploaded.
func (w *writer) cutPart(ctx context.Context, o *object, n int) error {
	next := append(w.s.partBuf(), o.buf[n:]...) // before the uploader may reuse o.buf
	j := &partJob{up: o.up, n: o.next, data: o.buf[:n:n], back: o.buf[:0]}
	if err := w.hand(ctx, j); err != nil {
		w.s.putBuf(next)
		return err
	}
	o.next++
	o.cut += int64(n)
	o.buf = next
	return nil
}

// roll closes the open object o: its format's last bytes (a Parquet
// footer) are appended, full parts handed over, and the rest becomes its
// last part. A format that fails leaves the object open and the writer
// failed: the task restarts from the last checkpoint.
func (w *writer) roll(ctx context.Context, o *object) error {
	before := len(o.buf)
	var err error
	if o.buf, err = o.ff.Close(o.buf); err != nil {
		return fmt.Errorf("s3 sink writer %d: close %s: %w", w.instance, o.up.key, err)
	}
	w.grew(o, before)
	for p := int(w.s.cfg.PartSize); len(o.buf) >= 2*p; {
		if err := w.cutPart(ctx, o, p); err != nil {
			return err
		}
	}
	j := &partJob{up: o.up, n: o.next, data: o.buf, back: o.buf[:0], last: true, size: o.size}
	if err := w.hand(ctx, j); err != nil {
		return err
	}
	w.forget(o)
	return nil
}

// forget takes o out of the open objects.
func (w *writer) forget(o *object) {
	delete(w.open, o.bucket)
	if w.last == o {
		w.last = nil
	}
}

func (w *writer) hand(ctx context.Context, j *partJob) error {
	w.up.held.Add(int64(len(j.data)))
	if err := w.up.send(ctx, task{part: j}); err != nil {
		w.up.held.Add(-int64(len(j.data)))
		return fmt.Errorf("s3 sink writer %d: %w: %w", w.instance, sink.ErrNotDurable, err)
	}
	return nil
}

// sortedOpen returns the open objects in the order of their keys.
func (w *writer) sortedOpen() []*object {
	out := make([]*object, 0, len(w.open))
	for _, o := range w.open {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *object) int { return strings.Compare(a.up.key, b.up.key) })
	return out
}

// PreCommit is PreCommitAsync with its finish run at once.
func (w *writer) PreCommit(ctx context.Context, id checkpoint.ID) ([]sink.Committable, error) {
	finish, err := w.PreCommitAsync(ctx, id)
	if err != nil {
		return nil, err
	}
	return finish()
}

// PreCommitAsync closes off everything written so far: it rolls each open
// object that is due (EndInput, roll_on_checkpoint, roll_age), flushes the
// rows the others' formats buffer (a Parquet row group) and records their
// formats' states, and queues barrier id behind the parts handed over.
// finish waits until the uploader has uploaded those parts and the open
// objects' new tail bytes (as deltas), and returns the committables not
// yet Committed. Writes may go on meanwhile: their bytes are past the
// barrier's sizes.
func (w *writer) PreCommitAsync(ctx context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	if w.closed {
		return nil, sink.ErrClosed
	}
	now := w.s.cfg.Now()
	for _, o := range w.sortedOpen() {
		if w.ended || w.s.cfg.RollOnCheckpoint || w.old(o, now) {
			if err := w.roll(ctx, o); err != nil {
				return nil, err
			}
		}
	}
	b := &barrierJob{id: id, reply: make(chan barrierResult, 1)}
	for _, o := range w.sortedOpen() {
		// A row group per checkpoint: the barrier's size holds every row
		// written before it, and the format's state says how to go on.
		before := len(o.buf)
		var err error
		if o.buf, err = o.ff.Flush(o.buf); err != nil {
			return nil, fmt.Errorf("s3 sink writer %d pre-commit %d: %w", w.instance, id, err)
		}
		w.grew(o, before)
		if err := w.cutParts(ctx, o); err != nil {
			return nil, fmt.Errorf("s3 sink writer %d pre-commit %d: %w", w.instance, id, err)
		}
		b.opens = append(b.opens, openSnap{up: o.up, tail: o.buf[:len(o.buf):len(o.buf)], off: o.cut, size: o.size, format: o.ff.State()})
	}
	if err := w.up.send(ctx, task{barrier: b}); err != nil {
		return nil, fmt.Errorf("s3 sink writer %d pre-commit %d: %w: %w", w.instance, id, sink.ErrNotDurable, err)
	}
	w.lastBarrier, w.seq = id, 0
	return func() ([]sink.Committable, error) {
		res := <-b.reply
		if res.err != nil {
			w.log.Warn().Err(res.err).Uint64("checkpoint", uint64(id)).Msg("pre-commit failed; output carried to the next checkpoint")
			return nil, res.err
		}
		return w.preCommitted(id, res.c), nil
	}, nil
}

// preCommitted adds c, barrier id's committable, to the carried ones and
// returns them. The open objects' states in older carried committables are
// superseded by c's and dropped (with the committables left empty).
func (w *writer) preCommitted(id checkpoint.ID, c committable) []sink.Committable {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.carried[:0]
	for _, old := range w.carried {
		d, err := w.s.names.decode(old)
		if err != nil || len(d.Opens) == 0 {
			kept = append(kept, old)
			continue
		}
		if d.Opens = nil; !d.empty() {
			kept = append(kept, encodeCommittable(old.Checkpoint, old.Writer, d))
		}
	}
	w.carried = kept
	cur := encodeCommittable(id, w.instance, c)
	if !c.empty() {
		w.carried = append(w.carried, cur)
		w.log.Debug().Uint64("checkpoint", uint64(id)).Int("complete", len(c.Complete)).Int("open", len(c.Opens)).Msg("pre-committed")
		return slices.Clone(w.carried)
	}
	// Nothing of this writer's to record: an empty committable all the
	// same, so that the checkpoint tells Recover its last barrier.
	return append(slices.Clone(w.carried), cur)
}

// Committed forgets the committables of checkpoints up to id.
func (w *writer) Committed(id checkpoint.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.carried = slices.DeleteFunc(w.carried, func(c sink.Committable) bool { return c.Checkpoint <= id })
}

// Close stops the uploader. The open objects' uploads stay for Recover,
// which resumes them from the last completed checkpoint (or aborts them).
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.up.stop()
	w.s.release(w)
	return nil
}
