package pipeline

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// stateFiles manages the state root's layout:
//
//	<state.dir>/work/worker-<i>/                  a worker's live Pebble store
//	<state.dir>/chk-<id>/worker-<i>/<file>        a full snapshot taken at checkpoint id
//	<state.dir>/chk-<id>/worker-<i>.changelog     what changed before barrier id
//
// A worker's snapshot at checkpoint n is a chain (state.Chain): its latest
// full snapshot and the changelogs after it, so one file serves many
// checkpoints, including one that never completed: its changelog starts the
// next checkpoint's chain. The checkpoint store deletes snapshot files once
// no retained checkpoint references them; stateFiles removes the
// directories left empty and, at start, every snapshot file that no
// checkpoint on disk references. The driver deletes the files of
// checkpoints that never completed once a later one completed without them
// (store.Discard); directories go once empty and unchanged for settleTime.
type stateFiles struct {
	root string
	log  zerolog.Logger
}

func (s *stateFiles) workDir(w int) string {
	return filepath.Join(s.root, "work", "worker-"+strconv.Itoa(w))
}

// abs turns a path relative to the root (as checkpoints record it) into
// one to open; "" stays "".
func (s *stateFiles) abs(rel string) string {
	if rel == "" {
		return ""
	}
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

// rel is abs's inverse.
func (s *stateFiles) rel(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	r, err := filepath.Rel(s.root, path)
	return filepath.ToSlash(r), err
}

// rels is rel of each path.
func (s *stateFiles) rels(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		r, err := s.rel(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
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
// checkpoints, and directories changed in the last settleTime, are left
// alone: a worker may be snapshotting into one (a full snapshot in the
// background creates its directory, then its files).
func (s *stateFiles) removeEmptyDirs(upTo checkpoint.ID) {
	for id, dir := range s.snapshotDirs() {
		if id > upTo {
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if p := filepath.Join(dir, e.Name()); e.IsDir() && settled(p) {
				_ = os.Remove(p) // fails unless empty
			}
		}
		if settled(dir) {
			_ = os.Remove(dir) // fails while a changelog is left
		}
	}
}

// settleTime is how long a snapshot directory must have been left
// unchanged before removeEmptyDirs removes it.
const settleTime = 10 * time.Second

func settled(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && time.Since(fi.ModTime()) > settleTime
}

// keepOnly removes every snapshot file that is not in keep (paths relative
// to the root): at start, what belongs to no checkpoint on disk.
func (s *stateFiles) keepOnly(keep map[string]struct{}) {
	for _, dir := range s.snapshotDirs() {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, err := s.rel(p)
			if _, kept := keep[rel]; err == nil && !kept {
				if err := os.Remove(p); err != nil {
					s.log.Warn().Err(err).Str("file", p).Msg("cannot remove an unreferenced state file")
				}
			}
			return nil
		})
	}
	s.removeEmptyDirs(s.maxID())
}
