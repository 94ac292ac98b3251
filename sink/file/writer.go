package file

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// fileWriter is one worker's writer of a File sink. Write, PreCommit and
// Close belong to one goroutine; Committed may be called from any.
type fileWriter struct {
	s        *File
	instance int
	log      zerolog.Logger
	first    checkpoint.ID // F of the files it opens: one more than the last barrier
	seq      int           // files opened since the last barrier
	cur      *part         // the part taking records, nil until the next Write
	parts    []*part       // rolled parts not yet handed out in a committable
	ioErr    error         // I/O failed since the last PreCommit: Write stays off the disk
	closed   bool
	ended    bool      // EndInput: the next pre-commit rolls the open part
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

// newFileWriter opens instance's writer; resume, if not nil, is the open
// file Recover restored for it (cut back to its recorded size), which it
// goes on writing.
func newFileWriter(s *File, instance int, after checkpoint.ID, resume *openState) (*fileWriter, error) {
	w := &fileWriter{
		s:        s,
		instance: instance,
		log:      s.log.With().Int("writer", instance).Logger(),
		first:    after + 1,
	}
	if resume != nil {
		ff, err := filefmt.Resume(s.cfg.Format, s.cfg.Parquet, resume.Format)
		if err != nil {
			return nil, fmt.Errorf("file sink writer %d: resume %s: %w", instance, resume.Name, err)
		}
		w.cur = &part{name: resume.Name, ff: ff, opened: time.UnixMilli(resume.Opened), resumed: true, dirSynced: true,
			off: resume.Size, written: resume.Size, counted: &s.bytesWritten}
	}
	return w, nil
}

// Write appends r's value to the current part, rolling it by age and size.
// I/O errors do not fail Write: the bytes stay buffered and PreCommit
// reports the error, unless the buffered backlog exceeds its limit.
func (w *fileWriter) Write(_ context.Context, r *record.Record) error {
	if w.closed {
		return sink.ErrClosed
	}
	now := w.batchAt
	if now.IsZero() {
		now = w.s.cfg.Now()
	}
	// Old, or full since a pre-commit flushed its format's buffered rows.
	if w.cur != nil && (w.old(w.cur, now) || w.cur.size() >= int64(w.s.cfg.RollSize)) {
		if err := w.roll(); err != nil {
			return err
		}
	}
	if w.cur == nil {
		ff, err := filefmt.New(w.s.cfg.Format, w.s.cfg.Parquet)
		if err != nil {
			return fmt.Errorf("file sink writer %d: %w", w.instance, err)
		}
		w.cur = &part{name: w.s.names.inProgressName(w.instance, w.first, w.seq), ff: ff, opened: now, counted: &w.s.bytesWritten}
		w.seq++
	}
	var err error
	if w.cur.buf, err = w.cur.ff.Append(w.cur.buf, r.Value); err != nil {
		return fmt.Errorf("file sink: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	// The bytes in the file count, not the rows a format buffers (their
	// encoded size is unknown until flushed, and compressed): a Parquet
	// file rolls once its row groups reach roll_size, so files are at
	// least roll_size.
	if w.cur.size() >= int64(w.s.cfg.RollSize) {
		if err := w.roll(); err != nil {
			return err
		}
	} else if len(w.cur.buf) >= fileBufferSize && w.ioErr == nil {
		if err := w.cur.flush(w.s.fs, w.s.cfg.Path); err != nil {
			w.ioFailed(err)
		}
	}
	if w.ioErr != nil && w.backlog() > maxBacklog {
		return fmt.Errorf("file sink writer %d: %w: %d bytes buffered since: %w", w.instance, sink.ErrNotDurable, w.backlog(), w.ioErr)
	}
	return nil
}

// old reports whether p reached roll_age at now.
func (w *fileWriter) old(p *part, now time.Time) bool {
	return w.s.cfg.RollAge > 0 && now.Sub(p.opened) >= w.s.cfg.RollAge
}

// BeginBatch reads the clock for the Writes that follow, until the next
// BeginBatch: a part rolls by age at the first batch that starts after it
// became old.
func (w *fileWriter) BeginBatch() { w.batchAt = w.s.cfg.Now() }

// roll closes the current part (synced now if the disk is healthy, else at
// the next PreCommit). An error is the format's: the part cannot be closed.
func (w *fileWriter) roll() error {
	p, err := w.rollLater()
	if err != nil {
		return err
	}
	if w.ioErr == nil {
		if err := p.finish(w.s.fs, w.s.cfg.Path); err != nil {
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
	if w.cur != nil {
		n += len(w.cur.buf)
	}
	return n
}

// rollLater closes the current part without syncing it: its format's last
// bytes (a Parquet footer) go to its buffer. A format that fails leaves
// the part open, and the writer failed: the task restarts from the last
// checkpoint.
func (w *fileWriter) rollLater() (*part, error) {
	p := w.cur
	var err error
	if p.buf, err = p.ff.Close(p.buf); err != nil {
		return nil, fmt.Errorf("file sink writer %d: close %s: %w", w.instance, p.name, err)
	}
	w.cur = nil
	p.state = partRolled
	w.parts = append(w.parts, p)
	return p, nil
}

// PreCommit makes everything written so far durable and returns the
// committables not yet Committed: the rolled files of n (if any) and those
// carried over, and the open file's durable size. It is PreCommitAsync
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

// PreCommitAsync is PreCommit with the fsyncs left to finish. It rolls the
// open part when roll_on_checkpoint is set, the input ended or the part
// reached roll_age (so that a quiet input's last records become visible
// without waiting for the next record), and else
// writes its buffer out (its fsync is finish's). The rolled parts it closes
// off leave the writer: only finish touches them, and a failed finish hands
// them back for the next pre-commit. Committed names are given here, so a
// file keeps its name however many pre-commits it takes to stage it.
func (w *fileWriter) PreCommitAsync(_ context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	if w.closed {
		return nil, sink.ErrClosed
	}
	w.takeReturned()
	if w.cur != nil && (w.s.cfg.RollOnCheckpoint || w.ended || w.old(w.cur, w.s.cfg.Now())) {
		if _, err := w.rollLater(); err != nil {
			return nil, err
		}
	}
	open := w.cur
	var state *openState
	if open != nil {
		var err error
		if open.buf, err = open.ff.Flush(open.buf); err != nil {
			return nil, fmt.Errorf("file sink writer %d pre-commit %d: %w", w.instance, id, err)
		}
		if err := open.flush(w.s.fs, w.s.cfg.Path); err != nil {
			w.ioFailed(err)
			return nil, fmt.Errorf("file sink writer %d pre-commit %d: %w: %w", w.instance, id, sink.ErrNotDurable, err)
		}
		if open.f == nil && !open.resumed {
			open = nil // no record made it into the file yet: nothing to record
		} else {
			state = &openState{Name: open.name, Size: open.off, Opened: open.opened.UnixMilli(), Format: open.ff.State()}
		}
	}
	w.ioErr = nil
	w.first, w.seq = id+1, 0
	staged := w.parts
	w.parts = nil
	var rolled []rename
	for i, p := range staged {
		if p.final == "" {
			p.final = w.s.names.finalName(w.instance, id, i)
		}
		rolled = append(rolled, rename{From: p.name, To: p.final})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(rolled) > 0 {
		w.carried = append(w.carried, w.s.names.encode(id, w.instance, fileCommittable{Rolled: rolled}))
	}
	cs := slices.Clone(w.carried)
	if state != nil {
		cs = append(cs, w.s.names.encode(id, w.instance, fileCommittable{Open: state}))
	}
	finish := func() ([]sink.Committable, error) {
		err := stage(w.s, staged, open)
		if err == nil {
			w.log.Debug().Uint64("checkpoint", uint64(id)).Int("rolled", len(staged)).Bool("open", open != nil).Msg("pre-committed")
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

// EndInput makes the next pre-commit roll the open part: the job stops
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
// part (nil for none), and fsyncs the directory if a file's name in it is
// not yet durable.
func stage(s *File, parts []*part, open *part) error {
	fs, dir := s.fs, s.cfg.Path
	dirty := false
	for _, p := range parts {
		if err := p.finish(fs, dir); err != nil {
			return err
		}
		dirty = dirty || !p.dirSynced
	}
	if open != nil {
		if err := open.syncOpen(); err != nil {
			return err
		}
		dirty = dirty || !open.dirSynced
	}
	if !dirty {
		return nil
	}
	if err := fsutil.SyncDir(fs, dir); err != nil {
		return err
	}
	for _, p := range parts {
		p.dirSynced = true
	}
	if open != nil {
		open.dirSynced = true
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
	for _, p := range append(w.parts, w.cur) {
		if p != nil {
			errs = append(errs, p.abandon())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("file sink writer %d close: %w", w.instance, err)
	}
	return nil
}
