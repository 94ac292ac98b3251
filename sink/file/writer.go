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
)

// fileWriter is one worker's writer of a File sink. Write, PreCommit and
// Close belong to one goroutine; Committed may be called from any.
type fileWriter struct {
	s        *File
	instance int
	log      zerolog.Logger
	enc      encoder
	seq      int     // sequence number of the next part
	cur      *part   // the part taking records, nil until the next Write
	parts    []*part // rolled parts not yet handed out in a committable
	ioErr    error   // I/O failed since the last PreCommit: Write stays off the disk
	closed   bool
	batchAt  time.Time // the clock at BeginBatch; zero: read it per Write

	mu       sync.Mutex
	carried  []sink.Committable // handed out by PreCommit, not yet Committed
	returned []*part            // parts of a failed asynchronous finish, for the next pre-commit
}

var (
	_ sink.Writer            = (*fileWriter)(nil)
	_ sink.AsyncPreCommitter = (*fileWriter)(nil)
	_ sink.Batcher           = (*fileWriter)(nil)
)

func newFileWriter(s *File, instance int) *fileWriter {
	return &fileWriter{
		s:        s,
		instance: instance,
		log:      s.log.With().Int("writer", instance).Logger(),
		enc:      encoder{format: s.cfg.Format},
	}
}

// Write appends r's value to the current part, rolling it by age and size.
// I/O errors do not fail Write: the bytes stay buffered and PreCommit
// reports the error, unless the buffered backlog exceeds its limit.
func (w *fileWriter) Write(_ context.Context, r *record.Record) error {
	if w.closed {
		return sink.ErrClosed
	}
	body, err := w.enc.encode(r.Value)
	if err != nil {
		return fmt.Errorf("file sink: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if len(body) == 0 {
		return nil
	}
	now := w.batchAt
	if now.IsZero() {
		now = w.s.cfg.Now()
	}
	if w.cur != nil && w.s.cfg.RollAge > 0 && now.Sub(w.cur.opened) >= w.s.cfg.RollAge {
		w.roll()
	}
	if w.cur == nil {
		w.cur = &part{name: w.s.names.inProgress(w.instance, w.seq), seq: w.seq, opened: now, counted: &w.s.bytesWritten}
		w.seq++
	}
	w.cur.buf = append(w.cur.buf, body...)
	if w.enc.format == FormatJSONL {
		w.cur.buf = append(w.cur.buf, '\n')
	}
	if w.cur.size() >= int64(w.s.cfg.RollSize) {
		w.roll()
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

// BeginBatch reads the clock for the Writes that follow, until the next
// BeginBatch: a part rolls by age at the first batch that starts after it
// became old.
func (w *fileWriter) BeginBatch() { w.batchAt = w.s.cfg.Now() }

// roll closes the current part (synced now if the disk is healthy, else at
// the next PreCommit).
func (w *fileWriter) roll() {
	p := w.rollLater()
	if w.ioErr == nil {
		if err := p.finish(w.s.fs, w.s.cfg.Path); err != nil {
			w.ioFailed(err)
		}
	}
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

// rollLater closes the current part without syncing it.
func (w *fileWriter) rollLater() *part {
	p := w.cur
	w.cur = nil
	p.state = partRolled
	w.parts = append(w.parts, p)
	return p
}

// PreCommit syncs and closes the current part, renames every finished part
// to its pending name, fsyncs the directory and returns the committables not
// yet Committed: n's (if anything was written) and those carried over. It is
// PreCommitAsync with its finish run at once; on failure the parts stay with
// the writer (and count towards its backlog) for the next pre-commit.
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

// PreCommitAsync is PreCommit with the syncs and renames left to finish.
// The parts it closes off leave the writer: only finish touches them, and a
// failed finish hands them back for the next pre-commit.
func (w *fileWriter) PreCommitAsync(_ context.Context, id checkpoint.ID) (func() ([]sink.Committable, error), error) {
	if w.closed {
		return nil, sink.ErrClosed
	}
	w.takeReturned()
	if w.cur != nil {
		w.rollLater()
	}
	w.ioErr = nil
	staged := w.parts
	w.parts = nil
	finals := make([]string, len(staged))
	for i, p := range staged {
		finals[i] = p.final
		if p.state != partPending { // renamed at finish, unless an earlier pre-commit did
			finals[i] = w.s.names.finalName(w.instance, id, p.seq)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(staged) > 0 {
		w.carried = append(w.carried, w.s.names.encode(id, w.instance, finals))
	}
	cs := slices.Clone(w.carried)
	finish := func() ([]sink.Committable, error) {
		err := stage(w.s, w.instance, id, staged)
		if err == nil {
			w.log.Debug().Uint64("checkpoint", uint64(id)).Int("files", len(staged)).Msg("pre-committed")
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

// stage makes every rolled part durable under its pending name. A part
// renamed by an earlier, failed pre-commit keeps the name it got then.
func stage(s *File, instance int, id checkpoint.ID, parts []*part) error {
	fs, dir := s.fs, s.cfg.Path
	for _, p := range parts {
		if err := p.finish(fs, dir); err != nil {
			return err
		}
	}
	if len(parts) == 0 {
		return nil
	}
	for _, p := range parts {
		if p.state == partPending {
			continue
		}
		final := s.names.finalName(instance, id, p.seq)
		if err := fs.Rename(fs.PathJoin(dir, p.name), fs.PathJoin(dir, pendingName(final))); err != nil {
			return fmt.Errorf("rename %s: %w", p.name, err)
		}
		p.final, p.state = final, partPending
	}
	return fsutil.SyncDir(fs, dir)
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
