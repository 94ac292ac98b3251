package store

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// Store is the completed-checkpoint store over one metadata directory. See
// the package documentation for what it owns and the write protocol.
//
// All methods are safe for concurrent use; they are serialised internally.
// The caller MUST call Close to release the directory lock.
type Store struct {
	fs        vfs.FS
	dir       string
	stateRoot string
	retained  int
	log       zerolog.Logger

	mu       sync.Mutex
	lock     io.Closer     // the checkpoint directory's
	slock    io.Closer     // the state root's
	maxID    checkpoint.ID // highest id seen on disk, valid or not, temp files included
	released []string      // state paths released, deleted by the next Collect
	remote   *remoteState  // nil: local only (AttachRemote)
}

// Open opens the store over dir, creating dir if needed. State file paths
// in checkpoint metadata are relative to stateRoot. retained (R, at least 1)
// is how many completed checkpoints Save keeps.
//
// Open takes a lock on dir (a second Store on the same dir fails), removes
// leftover temp files of interrupted saves and records the highest id on
// disk (see MaxID). It deletes no checkpoint and no state file: retention
// and garbage collection run only after a successful Save.
func Open(fs vfs.FS, dir, stateRoot string, retained int, logger zerolog.Logger) (*Store, error) {
	if retained < 1 {
		return nil, fmt.Errorf("open checkpoint store %s: retained is %d, must be at least 1", dir, retained)
	}
	s := &Store{
		fs:        fs,
		dir:       dir,
		stateRoot: stateRoot,
		retained:  retained,
		log:       logger.With().Str("component", "checkpoint-store").Str("dir", dir).Logger(),
	}
	// Both directories, and their entries up to the root, durable: the
	// state files' directories are created below the state root, which a
	// crash must not take away with them.
	for _, d := range []string{dir, stateRoot} {
		if err := fsutil.MkdirAll(fs, d); err != nil {
			return nil, fmt.Errorf("open checkpoint store: %w", err)
		}
	}
	lock, err := lockDir(fs, dir)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	s.lock = lock
	s.slock = io.NopCloser(nil) // nothing more to lock when the state root is the directory itself
	if filepath.Clean(stateRoot) != filepath.Clean(dir) {
		if s.slock, err = lockDir(fs, stateRoot); err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("open checkpoint store: %w", err)
		}
	}
	if err := s.removeTemps(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	s.maxID = max(s.maxID, s.stateMaxID())
	return s, nil
}

// lockDir takes dir's LOCK file, or says who holds it.
func lockDir(fs vfs.FS, dir string) (io.Closer, error) {
	name := fs.PathJoin(dir, lockName)
	l, err := Lock(fs, name)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%s: %w: another instance of this job is running on the same directories; stop it, or give this one its own checkpoint.dir and state.dir", dir, err)
	}
	return l, err
}

// Lock takes the lock file name (fcntl, released when the process dies),
// creating it if needed; an error wraps ErrLocked when another process
// holds it.
func Lock(fs vfs.FS, name string) (io.Closer, error) {
	l, err := fs.Lock(name)
	if err != nil {
		if heldByOther(err) {
			return nil, fmt.Errorf("lock file %s is %w (%w)", name, ErrLocked, err)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return l, nil
}

// heldByOther reports whether a lock failed because someone holds it:
// fcntl(F_SETLK) fails with EAGAIN (or EACCES on some systems; an EACCES
// from creating the lock file is a permission problem instead, and comes
// wrapped in a *fs.PathError); Pebble refuses a second lock in the same
// process with its own message.
func heldByOther(err error) bool {
	var pathErr *iofs.PathError
	return errors.Is(err, syscall.EAGAIN) || (errors.Is(err, syscall.EACCES) && !errors.As(err, &pathErr)) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// removeTemps deletes temp files left by saves that never reached the
// rename, folds their ids into maxID, and reports files that are not the
// store's (foreign files are never trusted for ids).
func (s *Store) removeTemps() error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", s.dir, err)
	}
	removed := false
	for _, name := range names {
		id, tmp, ok := parseName(name)
		if !ok {
			if name != lockName && name != modeLockName {
				s.log.Warn().Str("file", name).Msg("ignoring a file that is not a checkpoint of this store (a name it never writes, or an id above any it can reach)")
			}
			continue
		}
		s.maxID = max(s.maxID, id)
		if !tmp {
			continue
		}
		if err := s.fs.Remove(s.fs.PathJoin(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove leftover %s: %w", name, err)
		}
		s.log.Info().Str("file", name).Msg("removed temp file of an interrupted checkpoint save")
		removed = true
	}
	if removed {
		return fsutil.SyncDir(s.fs, s.dir)
	}
	return nil
}

// Close releases the directory lock. The store must not be used afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return nil
	}
	err := errors.Join(s.lock.Close(), s.slock.Close())
	s.lock, s.slock = nil, nil
	if err != nil {
		return fmt.Errorf("close checkpoint store %s: %w", s.dir, err)
	}
	return nil
}

// MaxID is the highest checkpoint id seen on disk: of any metadata file,
// whether it verifies or not, including temp files of interrupted saves and
// saves that failed, and of any state file or directory (a snapshot taken
// for a checkpoint that never completed is never overwritten). A coordinator restarting from this store must hand out
// ids above it. Zero when the directory held nothing.
func (s *Store) MaxID() checkpoint.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxID
}

// ids lists the ids of the metadata files in dir (temp files excluded),
// newest first.
func (s *Store) ids() ([]checkpoint.ID, error) {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dir, err)
	}
	var ids []checkpoint.ID
	for _, name := range names {
		if id, tmp, ok := parseName(name); ok && !tmp {
			ids = append(ids, id)
			s.maxID = max(s.maxID, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// Load reads and verifies the metadata of checkpoint id. It returns an error
// classed ErrNotFound if there is no such file, ErrCorrupt if it does not
// verify or references a state file that is missing, and a wrapped I/O error
// otherwise.
func (s *Store) Load(id checkpoint.ID) (*checkpoint.Metadata, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	md, _, err := s.load(id)
	if err != nil {
		return nil, err
	}
	if err := s.checkFiles(md); err != nil {
		return nil, err
	}
	return md, nil
}

// load reads and decodes one metadata file, returning its size too.
func (s *Store) load(id checkpoint.ID) (*checkpoint.Metadata, int64, error) {
	name := s.fs.PathJoin(s.dir, metaName(id))
	buf, err := readFile(s.fs, name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("load checkpoint %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("load checkpoint %d: %w", id, err)
	}
	md, err := decode(buf)
	if err != nil {
		return nil, int64(len(buf)), fmt.Errorf("load checkpoint %d from %s: %w", id, name, err)
	}
	if md.ID != id {
		return nil, int64(len(buf)), fmt.Errorf("load checkpoint %d from %s: %w: body holds id %d",
			id, name, ErrCorrupt, md.ID)
	}
	return &md, int64(len(buf)), nil
}

// checkFiles verifies that every state file md references exists; the
// error names the missing ones, in order.
func (s *Store) checkFiles(md *checkpoint.Metadata) error {
	var missing []string
	for _, f := range slices.Sorted(maps.Keys(files(md))) {
		_, err := s.fs.Stat(s.fs.PathJoin(s.stateRoot, f))
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, f)
			continue
		}
		if err != nil {
			return fmt.Errorf("load checkpoint %d: stat state file %s: %w", md.ID, f, err)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("load checkpoint %d: %w: state file %s is missing", md.ID, ErrCorrupt, missing[0])
	}
	return fmt.Errorf("load checkpoint %d: %w: state files %s are missing", md.ID, ErrCorrupt, strings.Join(missing, ", "))
}

// Skipped is a checkpoint on disk newer than the one LoadLatest returned,
// and why it cannot be restored (an error classed ErrCorrupt).
type Skipped struct {
	ID  checkpoint.ID
	Err error
}

// LoadLatest returns the newest checkpoint that can be restored: its
// metadata verifies and every state file it references exists. The newer
// ones that cannot be restored come back in skipped, newest first, each
// with its reason; the caller decides whether falling back past them is
// acceptable (it replays output they may have committed) and says so. It
// returns a nil checkpoint when none on disk can be restored (skipped then
// lists every one), and no error.
//
// An I/O error other than corruption is returned, not skipped: a
// checkpoint is skipped only when it is known to be broken.
func (s *Store) LoadLatest() (md *checkpoint.Metadata, skipped []Skipped, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.ids()
	if err != nil {
		return nil, nil, fmt.Errorf("load latest checkpoint: %w", err)
	}
	for _, id := range ids {
		md, _, err := s.load(id)
		if err == nil {
			err = s.checkFiles(md)
		}
		if err == nil {
			return md, s.withDamagedRemote(skipped, md.ID), nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return nil, nil, fmt.Errorf("load latest checkpoint: %w", err)
		}
		skipped = append(skipped, Skipped{ID: id, Err: err})
	}
	return nil, s.withDamagedRemote(skipped, 0), nil
}

// withDamagedRemote adds to skipped the checkpoints in checkpoint storage
// newer than restored whose metadata did not verify (AttachRemote), newest
// first.
func (s *Store) withDamagedRemote(skipped []Skipped, restored checkpoint.ID) []Skipped {
	if s.remote == nil {
		return skipped
	}
	for _, d := range s.remote.damaged {
		if d.ID > restored && !slices.ContainsFunc(skipped, func(k Skipped) bool { return k.ID == d.ID }) {
			skipped = append(skipped, d)
		}
	}
	slices.SortFunc(skipped, func(a, b Skipped) int { return cmp.Compare(b.ID, a.ID) })
	return skipped
}

// readFile reads a whole file, refusing files larger than any valid one.
func readFile(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, headerSize+maxBodySize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return buf, nil
}
