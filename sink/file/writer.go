package file

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

// fileWriter is one worker's writer of a File sink. Write, PreCommit and
// Close belong to one goroutine; Committed may be called from any.
type fileWriter struct {
	s        *File
	instance int
	log      zerolog.Logger
	buckets  *pathtmpl.Expander // nil: no path_template, every record in sink.path
	first    checkpoint.ID      // F of the files it opens: one more than the last barrier
	seq      int                // files opened since the last barrier
	open     map[string]*part   // the parts taking records, by bucket
	last     *part              // the part the last Write took, while open: its bucket's next Write skips the map
	writes   uint64             // Writes so far: the parts' last use
	parts    []*part            // rolled parts not yet handed out in a committable
	ioErr    error              // I/O failed since the last PreCommit: Write stays off the disk
	closed   bool
	ended    bool      // EndInput: the next pre-commit rolls the open parts
	batchAt  time.Time // the clock at BeginBatch; zero: read it per Write

	mu       sync.Mutex
	carried  []sink.Committable // handed out by PreCommit, not yet Committed
	returned []*part            // parts of a failed asynchronous finish, for the next pre-commit
}

var (
	_ sink.Writer            = (*fileWriter)(nil)
	_ sink.AsyncPreCommitter = (*fileWriter)(nil)
	_ sink.Batcher           = (*fileWriter)(nil)
	_ sink.InputEnder        = (*fileWriter)(nil)
)

// newFileWriter opens instance's writer; resume are the open files Recover
// restored for it (cut back to their recorded sizes), which it goes on
// writing, each in its bucket.
func newFileWriter(s *File, instance int, after checkpoint.ID, resume []openState) (*fileWriter, error) {
	w := &fileWriter{
		s:        s,
		instance: instance,
		log:      s.log.With().Int("writer", instance).Logger(),
		first:    after + 1,
		open:     make(map[string]*part, len(resume)),
	}
	if s.tmpl != nil {
		w.buckets = s.tmpl.NewExpander()
	}
	for _, o := range resume {
		ff, err := filefmt.Resume(s.cfg.Format, s.cfg.Parquet, o.Format, o.Name)
		if err != nil {
			return nil, fmt.Errorf("file sink writer %d: resume %s: %w", instance, o.Name, err)
		}
		bucket, _ := pathtmpl.Split(o.Name)
		w.open[bucket] = &part{bucket: bucket, name: o.Name, ff: ff, opened: time.UnixMilli(o.Opened), resumed: true, dirSynced: true,
			off: o.Size, written: o.Size, counted: &s.bytesWritten}
	}
	return w, nil
}

// Write appends r's value to the open part of its bucket, rolling it by
// age and size, and opening it (after rolling the least recently written
// part, if max_open_files are open) if needed. I/O errors do not fail
// Write: the bytes stay buffered and PreCommit reports the error, unless
// the buffered backlog exceeds its limit.
func (w *fileWriter) Write(_ context.Context, r *record.Record) error {
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
	p := w.last
	if p == nil || p.bucket != string(bucket) {
		p = w.open[string(bucket)]
	}
	// Old, or full since a pre-commit flushed its format's buffered rows.
	if p != nil && (w.old(p, now) || p.size() >= int64(w.s.cfg.RollSize)) {
		if err := w.roll(p); err != nil {
			return err
		}
		p = nil
	}
	opened := p == nil
	if opened {
		var err error
		if p, err = w.openPart(string(bucket), now); err != nil {
			return err
		}
	}
	w.writes++
	p.used = w.writes
	var err error
	if p.buf, err = p.ff.Append(p.buf, r.Value); err != nil {
		if opened {
			w.forget(p) // nothing taken: no file
			w.seq--
		}
		return fmt.Errorf("file sink: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if opened && p.size() == 0 && p.ff.Buffered() == 0 {
		// Nothing taken either (an empty raw value: a tombstone): a part
		// without a byte would never have a file, and its commit (and
		// every restart's) would fail, saying it is lost.
		w.forget(p)
		w.seq--
		return nil
	}
	w.last = p
	// The bytes in the file count, not the rows a format buffers (their
	// encoded size is unknown until flushed, and compressed): a Parquet
	// file rolls once its row groups reach roll_size, so files are at
	// least roll_size.
	if p.size() >= int64(w.s.cfg.RollSize) {
		if err := w.roll(p); err != nil {
			return err
		}
	} else if len(p.buf) >= fileBufferSize && w.ioErr == nil {
		if err := p.flush(w.s, false); err != nil {
			w.ioFailed(err)
		}
	}
	if w.ioErr != nil && w.backlog() > maxBacklog {
		return fmt.Errorf("file sink writer %d: %w: %d bytes buffered since: %w", w.instance, sink.ErrNotDurable, w.backlog(), w.ioErr)
	}
	return nil
}

// openPart opens the part of bucket, first rolling the least recently
// written parts while max_open_files are open.
func (w *fileWriter) openPart(bucket string, now time.Time) (*part, error) {
	for len(w.open) >= w.s.cfg.MaxOpenFiles {
		var lru *part
		for _, p := range w.open {
			if lru == nil || p.used < lru.used {
				lru = p
			}
		}
		if err := w.roll(lru); err != nil {
			return nil, err
		}
	}
	ff, err := filefmt.New(w.s.cfg.Format, w.s.cfg.Parquet)
	if err != nil {
		return nil, fmt.Errorf("file sink writer %d: %w", w.instance, err)
	}
	name := pathtmpl.Join(bucket, w.s.names.inProgressName(w.instance, w.first, w.seq))
	p := &part{bucket: bucket, name: name, ff: ff, opened: now, counted: &w.s.bytesWritten, bufs: &w.s.buffers}
	w.seq++
	w.open[bucket] = p
	return p, nil
}

// old reports whether p reached roll_age at now.
func (w *fileWriter) old(p *part, now time.Time) bool {
	return w.s.cfg.RollAge > 0 && now.Sub(p.opened) >= w.s.cfg.RollAge
}

// BeginBatch reads the clock for the Writes that follow, until the next
// BeginBatch: a part rolls by age at the first batch that starts after it
// became old.
func (w *fileWriter) BeginBatch() { w.batchAt = w.s.cfg.Now() }

// roll closes the open part p (synced now if the disk is healthy, else at
// the next PreCommit). An error is the format's: the part cannot be closed.
func (w *fileWriter) roll(p *part) error {
	if err := w.rollLater(p); err != nil {
		return err
	}
	if w.ioErr == nil {
		if err := p.finish(w.s); err != nil {
			w.ioFailed(err)
		}
	}
	return nil
}

func (w *fileWriter) ioFailed(err error) {
	w.ioErr = err
	w.log.Warn().Err(err).Msg("write failed; records stay buffered until the next pre-commit")
}

func (w *fileWriter) backlog() int {
	n := 0
	for _, p := range w.parts {
		n += len(p.buf)
	}
	for _, p := range w.open {
		n += len(p.buf)
	}
	return n
}

// forget takes p out of the open parts.
func (w *fileWriter) forget(p *part) {
	delete(w.open, p.bucket)
	if w.last == p {
		w.last = nil
	}
}

// rollLater closes the open part p without syncing it: its format's last
// bytes (a Parquet footer) go to its buffer. A format that fails leaves
// the part open, and the writer failed: the task restarts from the last
// checkpoint.
func (w *fileWriter) rollLater(p *part) error {
	var err error
	if p.buf, err = p.ff.Close(p.buf); err != nil {
		return fmt.Errorf("file sink writer %d: close %s: %w", w.instance, p.name, err)
	}
	w.forget(p)
	p.state = partRolled
	w.parts = append(w.parts, p)
	return nil
}

// sortedOpen returns the open parts in the order of their names.
func (w *fileWriter) sortedOpen() []*part {
	out := make([]*part, 0, len(w.open))
	for _, p := range w.open {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *part) int { return strings.Compare(a.name, b.name) })
	return out
}

// PreCommit makes everything written so far durable and returns the
// committables not yet Committed: the rolled files of n (if any) and those
// carried over, and the open files' durable sizes. It is PreCommitAsync
// with its finish run at once; on failure the rolled parts stay with the
// writer (and count towards its backlog) for the next pre-commit.
func (w *fileWriter) PreCommit(ctx context.Context, id checkpoint.ID) ([]sink.Committable, error) {
	finish, err := w.PreCommitAsync(ctx, id)
	if err != nil {
		return nil, err
	}
	cs, err := finish()
	if err != nil {
		w.takeReturned()
		w.ioErr = err
		return nil, err
	}
	return cs, nil
}

// PreCommitAsync is PreCommit with the fsyncs left to finish. It rolls
// each open part when roll_on_checkpoint is set, the input ended or the
// part reached roll_age (so that a quiet bucket's last records become
// visible without waiting for its next record), and else writes its
// buffer out (its fsync is finish's). The rolled parts it closes off leave
// the writer: only finish touches them, and a failed finish hands them
// back for the next pre-commit. Committed names are given here, so a file
// keeps its name however many pre-commits it takes to stage it.
func (w *fileWriter) PreCommitAsync(_ context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	if w.closed {
		return nil, sink.ErrClosed
	}
	w.takeReturned()
	now := w.s.cfg.Now()
	for _, p := range w.sortedOpen() {
		if w.s.cfg.RollOnCheckpoint || w.ended || w.old(p, now) {
			if err := w.rollLater(p); err != nil {
				return nil, err
			}
		}
	}
	var open []*part
	var states []openState
	for _, p := range w.sortedOpen() {
		var err error
		if p.buf, err = p.ff.Flush(p.buf); err != nil {
			return nil, fmt.Errorf("file sink writer %d pre-commit %d: %w", w.instance, id, err)
		}
		if err := p.flush(w.s, true); err != nil {
			w.ioFailed(err)
			return nil, fmt.Errorf("file sink writer %d pre-commit %d: %w: %w", w.instance, id, sink.ErrNotDurable, err)
		}
		if p.f == nil && !p.resumed {
			continue // no record made it into the file yet: nothing to record
		}
		open = append(open, p)
		states = append(states, openState{Name: p.name, Size: p.off, Opened: p.opened.UnixMilli(), Format: p.ff.State()})
	}
	w.ioErr = nil
	w.first, w.seq = id+1, 0
	staged := w.parts
	w.parts = nil
	var rolled []rename
	for i, p := range staged {
		if p.final == "" {
			p.final = pathtmpl.Join(p.bucket, w.s.names.finalName(w.instance, id, i))
		}
		rolled = append(rolled, rename{From: p.name, To: p.final})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(rolled) > 0 {
		w.carried = append(w.carried, w.s.names.encode(id, w.instance, fileCommittable{Rolled: rolled}))
	}
	cs := slices.Clone(w.carried)
	if len(states) > 0 {
		cs = append(cs, w.s.names.encode(id, w.instance, fileCommittable{OpenFiles: states}))
	}
	finish := func() ([]sink.Committable, error) {
		err := stage(w.s, staged, open)
		if err == nil {
			w.log.Debug().Uint64("checkpoint", uint64(id)).Int("rolled", len(staged)).Int("open", len(open)).Msg("pre-committed")
			return cs, nil
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.carried = slices.DeleteFunc(w.carried, func(c sink.Committable) bool { return c.Checkpoint == id })
		w.returned = staged
		w.log.Warn().Err(err).Uint64("checkpoint", uint64(id)).Msg("pre-commit failed; output carried to the next checkpoint")
		return nil, fmt.Errorf("file sink writer %d pre-commit %d: %w: %w", w.instance, id, sink.ErrNotDurable, err)
	}
	return finish, nil
}

// EndInput makes the next pre-commit roll the open parts: the job stops
// after that checkpoint, and all its output becomes visible.
func (w *fileWriter) EndInput() { w.ended = true }

// takeReturned puts the parts of a failed asynchronous finish back in
// front of the parts rolled since.
func (w *fileWriter) takeReturned() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.returned) > 0 {
		w.parts = append(w.returned, w.parts...)
		w.returned = nil
	}
}

// stage makes every rolled part durable and closes it, fsyncs the open
// parts, and fsyncs each directory in which a file's name is not yet
// durable (a bucket directory's own entry was made durable when it was
// created).
func stage(s *File, parts []*part, open []*part) error {
	var dirs []string
	for _, p := range parts {
		if err := p.finish(s); err != nil {
			return err
		}
		if !p.dirSynced {
			dirs = append(dirs, p.bucket)
		}
	}
	for _, p := range open {
		if err := p.syncOpen(); err != nil {
			return err
		}
		if !p.dirSynced {
			dirs = append(dirs, p.bucket)
		}
	}
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		if err := fsutil.SyncDir(s.fs, s.path(d)); err != nil {
			return err
		}
	}
	for _, p := range parts {
		p.dirSynced = true
	}
	for _, p := range open {
		p.dirSynced = true
	}
	return nil
}

// Committed forgets the committables of checkpoints up to id.
func (w *fileWriter) Committed(id checkpoint.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.carried = slices.DeleteFunc(w.carried, func(c sink.Committable) bool { return c.Checkpoint <= id })
}

// Close closes open files. Parts not pre-committed are left for Recover;
// pending files stay for a Commit still to come.
func (w *fileWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	defer w.s.release(w.instance)
	w.takeReturned()
	var errs []error
	for _, p := range append(w.parts, w.sortedOpen()...) {
		errs = append(errs, p.abandon())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("file sink writer %d close: %w", w.instance, err)
	}
	return nil
}
