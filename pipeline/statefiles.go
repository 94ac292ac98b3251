package pipeline

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
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
	fs   vfs.FS
	root string
	log  zerolog.Logger
}

func (s *stateFiles) workDir(w int) string {
	return s.fs.PathJoin(s.root, "work", "worker-"+strconv.Itoa(w))
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
	names, _ := s.fs.List(s.root)
	for _, name := range names {
		if id, ok := checkpoint.ParseName(name); ok {
			out[id] = s.fs.PathJoin(s.root, name)
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
		names, _ := s.fs.List(dir)
		for _, name := range names {
			if p := s.fs.PathJoin(dir, name); s.isDir(p) && s.settled(p) {
				_ = s.fs.Remove(p) // fails unless empty
			}
		}
		if s.settled(dir) {
			_ = s.fs.Remove(dir) // fails while a changelog is left
		}
	}
}

// settleTime is how long a snapshot directory must have been left
// unchanged before removeEmptyDirs removes it.
const settleTime = 10 * time.Second

func (s *stateFiles) settled(dir string) bool {
	fi, err := s.fs.Stat(dir)
	return err == nil && time.Since(fi.ModTime()) > settleTime
}

func (s *stateFiles) isDir(p string) bool {
	fi, err := s.fs.Stat(p)
	return err == nil && fi.IsDir()
}

// keepOnly removes every snapshot file that is not in keep (paths relative
// to the root): at start, what belongs to no checkpoint on disk.
func (s *stateFiles) keepOnly(keep map[string]struct{}) {
	for _, dir := range s.snapshotDirs() {
		s.walkFiles(dir, func(p string) {
			rel, err := s.rel(p)
			if _, kept := keep[rel]; err == nil && !kept {
				if err := s.fs.Remove(p); err != nil {
					s.log.Warn().Err(err).Str("file", p).Msg("cannot remove an unreferenced state file")
				}
			}
		})
	}
	s.removeEmptyDirs(s.maxID())
}

// walkFiles calls fn for every file below dir.
func (s *stateFiles) walkFiles(dir string, fn func(path string)) {
	names, _ := s.fs.List(dir)
	for _, name := range names {
		p := s.fs.PathJoin(dir, name)
		if s.isDir(p) {
			s.walkFiles(p, fn)
		} else {
			fn(p)
		}
	}
}
