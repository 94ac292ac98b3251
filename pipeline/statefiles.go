package pipeline

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// stateFiles manages the state root's layout:
//
//	<state.dir>/work/worker-<i>/                 a worker's live Pebble store
//	<state.dir>/chk-<id>/worker-<i>/<file>       its snapshot for checkpoint id
//
// The checkpoint store deletes snapshot files once no retained checkpoint
// references them; stateFiles removes the directories left empty, the
// files of checkpoints that never completed (Discard), and at start every
// snapshot that no checkpoint on disk references.
type stateFiles struct {
	root string
	log  zerolog.Logger
}

func (s *stateFiles) workDir(w int) string {
	return filepath.Join(s.root, "work", "worker-"+strconv.Itoa(w))
}

// remove deletes files (relative to the root) of checkpoint id, which will
// never complete. Every checkpoint snapshots into a directory of its own, so
// no other checkpoint references them.
func (s *stateFiles) remove(id checkpoint.ID, files []string) {
	for _, f := range files {
		if err := os.Remove(filepath.Join(s.root, filepath.FromSlash(f))); err != nil && !os.IsNotExist(err) {
			s.log.Warn().Err(err).Str("file", f).Msg("cannot remove a discarded state file")
		}
	}
	s.removeEmptyDirs(id)
}

// snapshotDirs lists the chk-<id> directories with their ids.
func (s *stateFiles) snapshotDirs() map[checkpoint.ID]string {
	out := map[checkpoint.ID]string{}
	entries, _ := os.ReadDir(s.root)
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), "chk-")
		if !ok || !e.IsDir() {
			continue
		}
		if id, err := strconv.ParseUint(name, 10, 64); err == nil {
			out[checkpoint.ID(id)] = filepath.Join(s.root, e.Name())
		}
	}
	return out
}

// maxID is the highest checkpoint id with a snapshot directory: a new
// checkpoint id must be above it, since a snapshot directory is never reused.
func (s *stateFiles) maxID() checkpoint.ID {
	var m checkpoint.ID
	for id := range s.snapshotDirs() {
		m = max(m, id)
	}
	return m
}

// removeEmptyDirs removes the snapshot directories of checkpoints up to id
// that are empty (the store deleted their files). Directories of later
// checkpoints are left alone: a worker may be snapshotting into one.
func (s *stateFiles) removeEmptyDirs(upTo checkpoint.ID) {
	for id, dir := range s.snapshotDirs() {
		if id > upTo {
			continue
		}
		workers, _ := os.ReadDir(dir)
		for _, w := range workers {
			_ = os.Remove(filepath.Join(dir, w.Name())) // fails unless empty
		}
		_ = os.Remove(dir)
	}
}

// keepOnly removes every snapshot file that is not in keep (paths relative
// to the root): at start, what belongs to no checkpoint on disk.
func (s *stateFiles) keepOnly(keep map[string]bool) {
	for _, dir := range s.snapshotDirs() {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(s.root, p)
			if err == nil && !keep[filepath.ToSlash(rel)] {
				if err := os.Remove(p); err != nil {
					s.log.Warn().Err(err).Str("file", p).Msg("cannot remove an unreferenced state file")
				}
			}
			return nil
		})
	}
	s.removeEmptyDirs(s.maxID())
}
