package store

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
)

// Collect applies retention and deletes unreferenced state files (steps 5-7
// of the write protocol): call it after a Persist, when the checkpoint's
// latency no longer matters. Failures are logged and retried by the next
// Save or Collect.
func (s *Store) Collect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.collectErr(); err != nil {
		s.log.Warn().Err(err).Msg("checkpoint clean-up incomplete, the next save retries it")
	}
	if s.remote == nil {
		return
	}
	if err := s.collectRemote(); err != nil {
		s.log.Warn().Err(err).Msg("checkpoint storage clean-up incomplete, the next save retries it")
	}
}

func (s *Store) collectErr() error {
	if err := s.retain(); err != nil {
		return err
	}
	var released error
	if len(s.released) > 0 {
		referenced, err := s.referenced()
		if err != nil {
			return err
		}
		// A release whose deletion fails stays to be tried again, and the
		// empty directories go meanwhile.
		released = s.removeReleased(referenced)
	}
	return errors.Join(released, s.removeEmptyDirs(s.maxID))
}

// retain applies retention (steps 5-7).
func (s *Store) retain() error {
	ids, err := s.ids()
	if err != nil {
		return err
	}
	var (
		kept       int
		referenced = make(map[string]struct{})
		dropped    []checkpoint.ID     // metadata files to remove
		candidates = map[string]bool{} // state files of dropped checkpoints
	)
	for _, id := range ids { // newest first
		md, _, err := s.load(id)
		switch {
		case err != nil && !errors.Is(err, ErrCorrupt):
			return err
		case err != nil && kept < s.retained:
			// A corrupt file inside the retained window stays for
			// inspection; it does not count towards R.
		case err != nil:
			dropped = append(dropped, id)
		case kept < s.retained:
			kept++
			maps.Copy(referenced, files(md))
		default:
			dropped = append(dropped, id)
			for f := range files(md) {
				candidates[f] = true
			}
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	var unreferenced []string
	for f := range candidates {
		if _, ok := referenced[f]; !ok {
			unreferenced = append(unreferenced, f)
		}
	}
	slices.Sort(unreferenced)
	// State files go first and are made durable before the metadata that
	// lists them is removed: a crash in between leaves a dropped checkpoint
	// whose clean-up the next Save repeats, never a leaked file.
	if err := s.removeStateFiles(unreferenced); err != nil {
		return err
	}
	for _, id := range dropped {
		name := s.fs.PathJoin(s.dir, metaName(id))
		if err := s.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
	}
	if err := fsutil.SyncDir(s.fs, s.dir); err != nil {
		return err
	}
	s.log.Debug().Int("checkpoints_dropped", len(dropped)).Int("state_files_deleted", len(unreferenced)).
		Msg("checkpoint retention applied")
	return nil
}

// Discard deletes those of files (state files acknowledged for checkpoints
// that never completed) that no checkpoint on disk references; it deletes
// nothing while a checkpoint on disk cannot be read. The caller
// calls it only once a checkpoint acknowledged after them completed: a task
// whose snapshots are chains may list a file of a failed checkpoint in its
// later snapshots too, and then that completed checkpoint lists it as well.
func (s *Store) Discard(names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	referenced, err := s.referenced()
	if err != nil {
		return err
	}
	var unreferenced []string
	for _, f := range names {
		if _, ok := referenced[f]; !ok {
			unreferenced = append(unreferenced, f)
		}
	}
	return s.removeStateFiles(unreferenced)
}

// referenced returns every state file a checkpoint on disk references,
// whether or not all of its files exist. If a checkpoint's metadata cannot
// be read its files are unknown, and it returns an error: nothing may be
// deleted then.
func (s *Store) referenced() (map[string]struct{}, error) {
	refs, unreadable, err := s.allReferences()
	if err == nil && len(unreadable) > 0 {
		err = fmt.Errorf("%w: checkpoints %v cannot be read, so the state files they reference are unknown", ErrCorrupt, unreadable)
	}
	return refs, err
}

// removeStateFiles deletes files under the state root and syncs every
// directory it removed from.
func (s *Store) removeStateFiles(names []string) error {
	dirs := make(map[string]struct{})
	for _, f := range names {
		p := s.fs.PathJoin(s.stateRoot, f)
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove state file %s: %w", p, err)
		}
		dirs[s.fs.PathDir(p)] = struct{}{}
		s.removeEmptyFullDir(f)
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := fsutil.SyncDir(s.fs, d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
