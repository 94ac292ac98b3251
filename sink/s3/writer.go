package s3

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/recfmt"
)

// object is the writer's open object: size bytes so far, of which the
// first cut went into parts 1..next-1 and the rest are in buf.
type object struct {
	up   *upload
	size int64
	cut  int64
	next int
	buf  []byte
}

// writer is one worker's writer of the s3 sink. Write, BeginBatch,
// EndInput, PreCommit, PreCommitAsync and Close belong to one goroutine;
// Committed may be called from any. Uploads run on its uploader goroutine.
type writer struct {
	s           *Sink
	instance    int
	log         zerolog.Logger
	up          *uploader
	scratch     bytes.Buffer
	jsonl       bool
	lastBarrier checkpoint.ID // names of new objects start after it
	seq         int           // objects opened since lastBarrier
	cur         *object       // nil until the next Write
	batchAt     time.Time     // the clock at BeginBatch; zero: read it per Write
	ended       bool          // EndInput: the next pre-commit rolls
	closed      bool
	maxBacklog  int64

	mu      sync.Mutex
	carried []sink.Committable // handed out by PreCommit, not yet Committed
}

var (
	_ sink.Writer            = (*writer)(nil)
	_ sink.AsyncPreCommitter = (*writer)(nil)
	_ sink.Batcher           = (*writer)(nil)
	_ sink.InputEnder        = (*writer)(nil)
)

func newWriter(s *Sink, instance int, lastBarrier checkpoint.ID, r *resumed) *writer {
	log := s.log.With().Int("writer", instance).Logger()
	w := &writer{
		s:           s,
		instance:    instance,
		log:         log,
		up:          newUploader(s, instance, log),
		jsonl:       recfmt.Separator(s.cfg.Format),
		lastBarrier: lastBarrier,
		maxBacklog:  max(64<<20, 4*int64(s.cfg.PartSize)),
	}
	if r != nil {
		w.cur = &object{up: r.up, size: r.size, cut: partsSize(r.up.parts), next: len(r.up.parts) + 1, buf: r.tail}
		w.log.Info().Str("key", r.up.key).Int64("size", r.size).Int("parts", len(r.up.parts)).Msg("resuming the open object")
	}
	return w
}

// Write appends r's value to the open object, opening one if needed, and
// hands each full part to the uploader (waiting while one part is queued
// already). The object rolls by age and size.
func (w *writer) Write(ctx context.Context, r *record.Record) error {
	if w.closed {
		return sink.ErrClosed
	}
	body, err := recfmt.Encode(w.s.cfg.Format, r.Value, &w.scratch)
	if err != nil {
		return fmt.Errorf("s3 sink: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if len(body) == 0 {
		return nil
	}
	now := w.batchAt
	if now.IsZero() {
		now = w.s.cfg.Now()
	}
	if w.cur != nil && w.s.cfg.RollAge > 0 && now.Sub(w.cur.up.opened) >= w.s.cfg.RollAge {
		if err := w.roll(ctx); err != nil {
			return err
		}
	}
	if w.cur == nil {
		w.open(now)
	}
	o := w.cur
	n := len(body)
	o.buf = append(o.buf, body...)
	if w.jsonl {
		o.buf = append(o.buf, '\n')
		n++
	}
	o.size += int64(n)
	w.s.bytesWritten.Add(uint64(n))
	switch {
	case o.size >= int64(w.s.cfg.RollSize):
		err = w.roll(ctx)
	case len(o.buf) >= int(w.s.cfg.PartSize):
		err = w.cutPart(ctx)
	}
	if err != nil {
		return err
	}
	if held := w.up.held.Load(); held > w.maxBacklog {
		return fmt.Errorf("s3 sink writer %d: %w: %d bytes not uploaded", w.instance, sink.ErrNotDurable, held)
	}
	return nil
}

// BeginBatch reads the clock for the Writes that follow, until the next
// BeginBatch.
func (w *writer) BeginBatch() { w.batchAt = w.s.cfg.Now() }

// EndInput makes the next pre-commit roll the open object: the final
// checkpoint makes everything visible.
func (w *writer) EndInput() { w.ended = true }

// open starts the next object: F is one more than the last barrier.
func (w *writer) open(now time.Time) {
	first := w.lastBarrier + 1
	key, base := w.s.names.objectKey(first, w.instance, w.seq)
	w.seq++
	w.cur = &object{
		up:   &upload{key: key, base: base, first: first, writer: w.instance, opened: now, token: newToken()},
		next: 1,
	}
}

// cutPart hands the buffered bytes over as the next part.
func (w *writer) cutPart(ctx context.Context) error {
	o := w.cur
	j := &partJob{up: o.up, n: o.next, data: o.buf}
	if err := w.hand(ctx, j); err != nil {
		return err
	}
	o.next++
	o.cut += int64(len(o.buf))
	o.buf = nil // the uploader owns the old array now
	return nil
}

// roll hands the buffered bytes over as the open object's last part.
func (w *writer) roll(ctx context.Context) error {
	o := w.cur
	j := &partJob{up: o.up, n: o.next, data: o.buf, last: true, size: o.size}
	if err := w.hand(ctx, j); err != nil {
		return err
	}
	w.cur = nil
	return nil
}

func (w *writer) hand(ctx context.Context, j *partJob) error {
	w.up.held.Add(int64(len(j.data)))
	if err := w.up.send(ctx, task{part: j}); err != nil {
		w.up.held.Add(-int64(len(j.data)))
		return fmt.Errorf("s3 sink writer %d: %w: %w", w.instance, sink.ErrNotDurable, err)
	}
	return nil
}

// PreCommit is PreCommitAsync with its finish run at once.
func (w *writer) PreCommit(ctx context.Context, id checkpoint.ID) ([]sink.Committable, error) {
	finish, err := w.PreCommitAsync(ctx, id)
	if err != nil {
		return nil, err
	}
	return finish()
}

// PreCommitAsync closes off everything written so far: it rolls the open
// object if it is due (EndInput, roll_on_checkpoint, roll_age) and queues
// barrier id behind the parts handed over. finish waits until the
// uploader has uploaded those parts and the open object's new tail bytes
// (as a delta), and returns the committables not yet Committed. Writes may
// go on meanwhile: their bytes are past the barrier's size.
func (w *writer) PreCommitAsync(ctx context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	if w.closed {
		return nil, sink.ErrClosed
	}
	if o := w.cur; o != nil {
		due := w.ended || w.s.cfg.RollOnCheckpoint || (w.s.cfg.RollAge > 0 && w.s.cfg.Now().Sub(o.up.opened) >= w.s.cfg.RollAge)
		if due {
			if err := w.roll(ctx); err != nil {
				return nil, err
			}
		}
	}
	b := &barrierJob{id: id, reply: make(chan barrierResult, 1)}
	if o := w.cur; o != nil {
		b.open, b.tail, b.off, b.size = o.up, o.buf[:len(o.buf):len(o.buf)], o.cut, o.size
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
// returns them. The open object's state in older carried committables is
// superseded by c's and dropped (with the committables left empty).
func (w *writer) preCommitted(id checkpoint.ID, c committable) []sink.Committable {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.carried[:0]
	for _, old := range w.carried {
		d, err := w.s.names.decode(old)
		if err != nil || d.Open == nil {
			kept = append(kept, old)
			continue
		}
		if d.Open = nil; !d.empty() {
			kept = append(kept, encodeCommittable(old.Checkpoint, old.Writer, d))
		}
	}
	w.carried = kept
	cur := encodeCommittable(id, w.instance, c)
	if !c.empty() {
		w.carried = append(w.carried, cur)
		w.log.Debug().Uint64("checkpoint", uint64(id)).Int("complete", len(c.Complete)).Bool("open", c.Open != nil).Msg("pre-committed")
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

// Close stops the uploader. The open object's upload stays for Recover,
// which resumes it from the last completed checkpoint (or aborts it).
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.up.stop()
	w.s.release(w.instance)
	return nil
}
