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
}

func (s *Store) collectErr() error {
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
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := fsutil.SyncDir(s.fs, d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
