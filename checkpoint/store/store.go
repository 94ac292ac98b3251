package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

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
	lock     io.Closer
	maxID    checkpoint.ID // highest id seen on disk, valid or not, temp files included
	released []string      // state paths released, deleted by the next Collect
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
	lock, err := fs.Lock(fs.PathJoin(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("open checkpoint store: lock %s: %w", dir, err)
	}
	s.lock = lock
	if err := s.removeTemps(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("open checkpoint store: %w", err)
	}
	s.maxID = max(s.maxID, s.stateMaxID())
	return s, nil
}

// removeTemps deletes temp files left by saves that never reached the
// rename, and folds their ids into maxID.
func (s *Store) removeTemps() error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", s.dir, err)
	}
	removed := false
	for _, name := range names {
		id, tmp, ok := parseName(name)
		if !ok {
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
	err := s.lock.Close()
	s.lock = nil
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

// checkFiles verifies that every state file md references exists.
func (s *Store) checkFiles(md *checkpoint.Metadata) error {
	for f := range files(md) {
		_, err := s.fs.Stat(s.fs.PathJoin(s.stateRoot, f))
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("load checkpoint %d: %w: state file %s is missing", md.ID, ErrCorrupt, f)
		}
		if err != nil {
			return fmt.Errorf("load checkpoint %d: stat state file %s: %w", md.ID, f, err)
		}
	}
	return nil
}

// LoadLatest returns the newest checkpoint that can be restored: its
// metadata verifies and every state file it references exists. A newer one
// that does not verify is skipped with a warning in the log. It returns nil
// and no error when no checkpoint can be restored (none on disk, or all
// corrupt).
//
// An I/O error other than corruption is returned, not skipped: falling back
// to an older checkpoint than the newest completed one replays output the
// sinks may already have committed, so it happens only when the newer one
// is known to be broken.
func (s *Store) LoadLatest() (*checkpoint.Metadata, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.ids()
	if err != nil {
		return nil, fmt.Errorf("load latest checkpoint: %w", err)
	}
	for _, id := range ids {
		md, _, err := s.load(id)
		if err == nil {
			err = s.checkFiles(md)
		}
		if err == nil {
			return md, nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("load latest checkpoint: %w", err)
		}
		s.log.Warn().Err(err).Uint64("checkpoint", uint64(id)).
			Msg("checkpoint cannot be restored, falling back to the previous one")
	}
	return nil, nil
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
