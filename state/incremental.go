package state

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// Chain is an incremental snapshot: a full snapshot (a directory written by
// Snapshot, or "" for empty state) and the changelogs written after it,
// oldest first. Opening Base and applying the changelogs in order gives the
// state at the snapshot's barrier: Open with a Config.Restore source that
// names the chain and the key groups of the Store that wrote it.
type Chain struct {
	Base       string
	BaseFiles  []string // the names of the files in Base, sorted
	Changelogs []string
	Bytes      int64 // size of every file of the chain
}

// Files lists every file the chain needs: Base's files (joined to Base),
// then the changelogs.
func (c Chain) Files() []string {
	out := make([]string, 0, len(c.BaseFiles)+len(c.Changelogs))
	for _, f := range c.BaseFiles {
		out = append(out, filepath.Join(c.Base, f))
	}
	return append(out, c.Changelogs...)
}

// chain is the Store's current Chain, as the next Checkpoint extends it.
type chain struct {
	base      string
	baseFiles []string
	baseBytes int64
	baseSeq   uint64 // the barrier (Store.seq) the base was taken at
	// named: a snapshot handed out (or the checkpoint restored) names the
	// base, which the Store therefore never deletes. A background full
	// snapshot is adopted unnamed.
	named    bool
	logs     []changelog
	logBytes int64
}

type changelog struct {
	path string
	size int64
	seq  uint64 // the barrier it was written for
}

func (c *chain) public() Chain {
	out := Chain{Base: c.base, BaseFiles: c.baseFiles, Bytes: c.baseBytes + c.logBytes}
	for _, l := range c.logs {
		out.Changelogs = append(out.Changelogs, l.path)
	}
	return out
}

func (c *chain) add(l changelog) {
	c.logs = append(c.logs, l)
	c.logBytes += l.size
}

// Pending is the asynchronous part of a Checkpoint: writing the delta of
// the writes made before the barrier as a changelog. The Store's owner MUST
// call Wait exactly once, from any goroutine; the next Checkpoint waits for
// it and accounts for its result.
type Pending struct {
	fs      vfs.FS
	log     zerolog.Logger
	release func(paths ...string)
	path    string
	maxPar  int
	frozen  *delta  // nil: nothing to write (a full snapshot, or no write)
	stream  *stream // frozen's changelog so far, if it was streamed (stream.go)
	seq     uint64
	chain   Chain // without this barrier's changelog
	size    int64
	err     error
	done    chan struct{}
}

// Wait writes the changelog (durably: file and directories synced) and
// returns the chain that is the snapshot, or the error that makes the
// checkpoint fail. After an error the Store's next checkpoint takes a full
// snapshot, which holds this one's writes (a streamed delta is no longer
// in memory to be written again).
func (p *Pending) Wait() (Chain, error) {
	defer close(p.done)
	c := p.chain
	if p.frozen == nil {
		return c, nil
	}
	if p.stream != nil {
		p.size, p.err = p.stream.finish(p.frozen, p.maxPar, p.path)
	} else {
		p.size, p.err = writeChangelog(p.fs, p.path, p.maxPar, p.frozen)
	}
	if p.err != nil {
		p.release(p.path) // what of it was written, if anything
		return Chain{}, p.err
	}
	c.Changelogs = append(slices.Clip(c.Changelogs), p.path)
	c.Bytes += p.size
	return c, nil
}

// background is a full snapshot taken on its own goroutine while the worker
// goes on writing.
type background struct {
	dir   string
	seq   uint64
	files []string
	bytes int64
	took  time.Duration
	err   error
	done  chan struct{}
}

// Checkpoint takes the synchronous part of a snapshot at a barrier: it
// sets aside the writes made since the previous barrier, to be written as a
// changelog at changelogPath by the returned Pending's Wait, while the
// caller goes on writing. It costs no I/O beyond creating changelogPath's
// directory (and, rarely, removing a background full snapshot that a
// synchronous one made useless).
//
// A full snapshot is taken instead, synchronously into fullDir, when the
// writes since the previous barrier outgrew changelogLimit, or their
// stream failed, or the previous changelog did. Once the changelogs since
// the last full snapshot reach Config.FullSnapshotAfter bytes or
// maxChangelogs files, a full snapshot
// into fullDir starts in the background; the first Checkpoint after it
// finished uses it as the chain's base, which keeps restores short. That
// snapshot is fuzzy: it holds every write before this barrier and possibly
// some after it. Restoring it plus
// the changelogs of the later barriers is still exact, because every later
// write of a key is in one of them, and the last one applied wins.
//
// fullDir and changelogPath must not exist; on another filesystem than the
// working directory's, a full snapshot copies its tables and a streamed
// changelog is copied there, where on the same one they are linked and
// renamed. The caller owns them once a snapshot that names them was
// returned (the Store never deletes a file after handing it out).
func (s *Store) Checkpoint(fullDir, changelogPath string) (*Pending, error) {
	if s.db == nil {
		return nil, ErrClosed
	}
	// A full snapshot, now or in the background, holds every write before
	// the barrier.
	if err := s.apply(); err != nil {
		return nil, err
	}
	s.settle()
	if s.stream != nil && s.stream.failed.Load() {
		s.dropFailedStream()
	}
	s.seq++
	s.reclaimSpace()
	p := &Pending{fs: s.fs, log: s.log, release: s.release, path: changelogPath, maxPar: s.maxPar, seq: s.seq, done: make(chan struct{})}
	if s.delta == nil {
		h, err := s.Snapshot(fullDir)
		if err != nil {
			return nil, err // still no delta: the next barrier tries again
		}
		if !s.chain.named && s.chain.base != "" {
			s.release(s.chain.base) // adopted, then replaced before any snapshot named it
		}
		s.chain = chain{base: fullDir, baseFiles: h.Files, baseBytes: h.Bytes, baseSeq: s.seq}
		s.delta = newDelta(s.pool, s.maxPar)
		return s.hand(p), nil
	}
	if s.delta.n > 0 {
		if err := s.fs.MkdirAll(filepath.Dir(changelogPath), 0o755); err != nil {
			return nil, fmt.Errorf("create the changelog's dir: %w", err)
		}
		p.frozen, p.stream = s.delta, s.stream
		s.delta, s.stream = newDelta(s.pool, s.maxPar), nil
	}
	if s.bg == nil && (s.chain.logBytes >= s.fullAfter || len(s.chain.logs) >= maxChangelogs) {
		s.startBackground(fullDir)
	}
	return s.hand(p), nil
}

// hand returns p, which names the current chain, as the last Pending.
func (s *Store) hand(p *Pending) *Pending {
	p.chain = s.chain.public()
	s.chain.named = true
	s.last = p
	return p
}

// maxChangelogs caps a chain's length, whatever their size: each is a file
// to list in every checkpoint's metadata and to open on restore. At one
// checkpoint a second, a full snapshot every 100 s.
const maxChangelogs = 100

// settle accounts for the last Pending (waiting for it if need be) and
// adopts a finished background full snapshot.
func (s *Store) settle() {
	if p := s.last; p != nil {
		<-p.done
		s.last = nil
		switch {
		case p.err != nil:
			// The chain lacks the failed changelog's writes: the next
			// barrier takes a full snapshot.
			s.delta = nil
			s.abortStream()
		case p.frozen != nil:
			s.chain.add(changelog{path: p.path, size: p.size, seq: p.seq})
		}
	}
	if s.bg == nil {
		return
	}
	select {
	case <-s.bg.done:
	default:
		return
	}
	bg := s.bg
	s.bg = nil
	switch {
	case bg.err != nil:
		s.log.Warn().Err(bg.err).Str("snapshot", bg.dir).Msg("background full state snapshot failed; the next checkpoint retries")
		return
	case bg.seq <= s.chain.baseSeq:
		// A synchronous full snapshot replaced it: no chain references it.
		s.release(bg.dir)
		return
	}
	c := chain{base: bg.dir, baseFiles: bg.files, baseBytes: bg.bytes, baseSeq: bg.seq}
	for _, l := range s.chain.logs {
		if l.seq > bg.seq {
			c.add(l)
		}
	}
	s.log.Debug().Str("snapshot", bg.dir).Dur("duration_ms", bg.took).Int64("bytes", bg.bytes).
		Int("changelogs_dropped", len(s.chain.logs)-len(c.logs)).Msg("background full state snapshot in use")
	s.chain = c
}

// startBackground starts a full snapshot into dir. Pebble's Checkpoint is
// safe alongside writes; the Store's owner goes on calling Set and Delete.
func (s *Store) startBackground(dir string) {
	bg := &background{dir: dir, seq: s.seq, done: make(chan struct{})}
	s.bg = bg
	db := s.db
	go func() {
		defer close(bg.done)
		start := time.Now()
		if !s.wal {
			if err := s.flushWait(db); err != nil {
				bg.err = fmt.Errorf("flush: %w", err)
				return
			}
		}
		if err := db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
			bg.err = err // Checkpoint removed dir
			return
		}
		bg.files, bg.bytes, bg.err = listSizes(s.fs, dir)
		if bg.err != nil {
			s.release(dir)
		}
		bg.took = time.Since(start)
	}()
}

// changelogLimit caps a changelog's size, and Config.FullSnapshotAfter
// does when smaller: a restore reads a changelog whole and applies it as
// one batch (changelog.go, applyChangelog). A delta that outgrows it is
// dropped and the next barrier takes a full snapshot: the cost of a long
// interval or a restart's backlog.
const changelogLimit = 16 << 20

// checkDeltaSize drops the delta once it outgrew its limit (see
// changelogLimit).
func (s *Store) checkDeltaSize() {
	if s.delta != nil && s.delta.bytes() > min(s.fullAfter, changelogLimit) {
		s.delta = nil
		s.abortStream()
	}
}
