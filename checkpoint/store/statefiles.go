package store

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
)

// The store is the one owner of deletion under the state root: the files of
// dropped checkpoints (retention), of failed ones (Discard), those the
// state package releases (Release), and, at start, those no checkpoint on
// disk references (CleanStateRoot). Its layout, relative to the root:
//
//	work/worker-<i>/                  a worker's live Pebble store (package
//	                                  state owns it; wiped at every open)
//	work/worker-<i>.changelog-<o>-<n> a changelog being written before its
//	                                  barrier (package state's, <o> naming
//	                                  the Store's open; renamed to chk-<id>/
//	                                  at the barrier, removed at open)
//	chk-<id>/worker-<i>.changelog     what worker i's state changed before barrier id
//	full/chk-<id>-worker-<i>/         a full snapshot of worker i's state,
//	                                  taken at barrier id (synchronously or
//	                                  in the background)
//
// A chk-<id> directory holds only changelogs, written before barrier id is
// acknowledged, so once a checkpoint at or above id is durable no task
// writes there again and the store removes it when empty. A full/
// directory is one snapshot, removed with its last file.

const fullDir = "full"

// ChangelogPath is where worker's changelog of barrier id goes, relative to
// the state root.
func ChangelogPath(id checkpoint.ID, worker int) string {
	return id.Name() + "/worker-" + strconv.Itoa(worker) + ".changelog"
}

// FullSnapshotPath is the directory of worker's full snapshot started at
// barrier id, relative to the state root.
func FullSnapshotPath(id checkpoint.ID, worker int) string {
	return fullDir + "/" + id.Name() + "-worker-" + strconv.Itoa(worker)
}

// WorkDir is worker's live state directory, relative to the state root.
func WorkDir(worker int) string { return "work/worker-" + strconv.Itoa(worker) }

// RemoveWorkDirsFrom removes, at start and before any task runs, what the
// workers numbered workers and above left in work/: their live state
// directories and what a crash left of their changelog streams
// (work/worker-<i>, work/worker-<i>.<anything>). A job restarted with
// fewer workers (or without keyed state: workers 0) never opens those
// again, and a Store's Open wipes only its own; they held a worker's whole
// state database each, for good. Other names are left alone. It returns
// what it removed, relative to the state root.
func (s *Store) RemoveWorkDirsFrom(workers int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names, err := s.fs.List(s.fs.PathJoin(s.stateRoot, "work"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list work: %w", err)
	}
	slices.Sort(names)
	var removed []string
	for _, name := range names {
		if i, ok := workerOf(name); !ok || i < workers {
			continue
		}
		if err := s.fs.RemoveAll(s.fs.PathJoin(s.stateRoot, "work", name)); err != nil {
			return removed, fmt.Errorf("remove work/%s: %w", name, err)
		}
		removed = append(removed, "work/"+name)
	}
	return removed, nil
}

// workerOf is the worker number of a name in work/: worker-<i>, or
// worker-<i>.<anything>.
func workerOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "worker-")
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, ".")
	i, err := strconv.Atoi(digits)
	return i, err == nil && i >= 0 && digits == strconv.Itoa(i)
}

// Release takes state files or directories that no task will ever
// reference (absolute paths, or relative to the state root): the next
// Collect deletes them, unless a checkpoint on disk references something
// in them. Safe from any goroutine.
func (s *Store) Release(paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		if rel, ok := s.relState(p); ok {
			s.released = append(s.released, rel)
		}
	}
}

// relState turns p into a clean path relative to the state root; false if
// it lies outside. Both are cleaned first: the runtime joins its paths
// (filepath.Join cleans "./data/state/..." to "data/state/..."), and
// state.dir defaults to "./data/state", which a released path then did not
// start with, and its deletion looked for it under the root a second time.
func (s *Store) relState(p string) (string, bool) {
	p = filepath.Clean(p)
	if root := filepath.Clean(s.stateRoot); root != "." {
		if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/"); ok {
			p = rel
		}
	}
	return p, validStatePath(p) == nil
}

// removeReleased deletes what was released, keeping what a checkpoint
// references. Called with mu held.
func (s *Store) removeReleased(referenced map[string]struct{}) error {
	var errs []error
	var again []string // whose deletion failed: the next Save tries again
	for _, p := range s.released {
		if holds(referenced, p) {
			continue
		}
		if err := s.fs.RemoveAll(s.fs.PathJoin(s.stateRoot, p)); err != nil {
			errs = append(errs, fmt.Errorf("remove released state %s: %w", p, err))
			again = append(again, p)
			continue
		}
		s.removeEmptyFullDir(p)
	}
	s.released = again
	return errors.Join(errs...)
}

// holds reports whether a referenced file is p or lies under p.
func holds(referenced map[string]struct{}, p string) bool {
	for f := range referenced {
		if f == p || strings.HasPrefix(f, p+"/") {
			return true
		}
	}
	return false
}

// removeEmptyDirs removes the chk-<id> directories of the state root with
// id <= upTo that are empty (see the layout above for why no task writes
// in them anymore), and syncs the root. Called with mu held.
func (s *Store) removeEmptyDirs(upTo checkpoint.ID) error {
	names, err := s.fs.List(s.stateRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", s.stateRoot, err)
	}
	removed := false
	slices.Sort(names)
	for _, name := range names {
		if id, ok := checkpoint.ParseName(name); ok && id <= upTo {
			if s.fs.Remove(s.fs.PathJoin(s.stateRoot, name)) == nil { // fails unless empty
				removed = true
			}
		}
	}
	if removed {
		return fsutil.SyncDir(s.fs, s.stateRoot)
	}
	return nil
}

// removeEmptyFullDir removes the full snapshot directory a file p
// (relative) lies in, if it is now empty.
func (s *Store) removeEmptyFullDir(p string) {
	parts := strings.Split(p, "/")
	if len(parts) >= 2 && parts[0] == fullDir {
		_ = s.fs.Remove(s.fs.PathJoin(s.stateRoot, parts[0], parts[1])) // fails unless empty
	}
}

// CleanStateRoot deletes, at start and before any task runs, every state
// file that no checkpoint on disk references, then the empty directories.
// If a checkpoint on disk cannot be read, it deletes nothing: that
// checkpoint's files are unknown, and it may be the one an operator
// repairs. It returns what it deleted, relative to the state root.
func (s *Store) CleanStateRoot() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	referenced, unreadable, err := s.allReferences()
	if err != nil {
		return nil, err
	}
	if len(unreadable) > 0 {
		s.log.Warn().Uints64("unreadable_checkpoints", ids64(unreadable)).
			Msg("state files left in place: a checkpoint on disk cannot be read, so its files are unknown")
		return nil, nil
	}
	var deleted []string
	for _, top := range s.stateDirs() {
		files, err := s.walk(top)
		if err != nil {
			return deleted, err
		}
		for _, f := range files {
			if _, ok := referenced[f]; ok {
				continue
			}
			if err := s.fs.Remove(s.fs.PathJoin(s.stateRoot, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return deleted, fmt.Errorf("remove unreferenced state file %s: %w", f, err)
			}
			deleted = append(deleted, f)
		}
		if strings.HasPrefix(top, fullDir+"/") {
			_ = s.fs.Remove(s.fs.PathJoin(s.stateRoot, top)) // an empty full snapshot directory
		}
	}
	if err := s.removeEmptyDirs(^checkpoint.ID(0)); err != nil {
		return deleted, err
	}
	return deleted, nil
}

// stateMaxID is the highest checkpoint id a name in the state root carries;
// names above MaxID are foreign (the store never writes them) and ignored.
func (s *Store) stateMaxID() checkpoint.ID {
	var m checkpoint.ID
	for _, d := range s.stateDirs() {
		if id, ok := statePathID(d); ok {
			m = max(m, id)
		}
	}
	return m
}

// statePathID is the checkpoint id a state path (a file or a checkpoint
// directory, relative to the state root) was written for: chk-<id>/... and
// full/chk-<id>-worker-<n>/....
func statePathID(p string) (checkpoint.ID, bool) {
	first, _, _ := strings.Cut(strings.TrimPrefix(p, fullDir+"/"), "/")
	name, _, _ := strings.Cut(first, "-worker-")
	id, ok := checkpoint.ParseName(name)
	return id, ok && id <= MaxID
}

// stateDirs lists the checkpoint directories of the state root: each
// chk-<id> and each full/<snapshot>, relative to the root.
func (s *Store) stateDirs() []string {
	var out []string
	names, _ := s.fs.List(s.stateRoot)
	for _, name := range names {
		if _, ok := checkpoint.ParseName(name); ok {
			out = append(out, name)
		}
	}
	fulls, _ := s.fs.List(s.fs.PathJoin(s.stateRoot, fullDir))
	for _, name := range fulls {
		out = append(out, fullDir+"/"+name)
	}
	slices.Sort(out)
	return out
}

// walk lists the files below dir (relative to the state root), relative.
func (s *Store) walk(dir string) ([]string, error) {
	names, err := s.fs.List(s.fs.PathJoin(s.stateRoot, dir))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		p := dir + "/" + name
		fi, err := s.fs.Stat(s.fs.PathJoin(s.stateRoot, p))
		switch {
		case err != nil:
			return nil, fmt.Errorf("stat %s: %w", p, err)
		case fi.IsDir():
			sub, err := s.walk(p)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		default:
			out = append(out, p)
		}
	}
	return out, nil
}

// allReferences returns every state file a readable checkpoint on disk
// references, intact or missing files, and the ids of those it cannot read.
func (s *Store) allReferences() (map[string]struct{}, []checkpoint.ID, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, nil, err
	}
	referenced := make(map[string]struct{})
	var unreadable []checkpoint.ID
	for _, id := range ids {
		md, _, err := s.load(id)
		switch {
		case errors.Is(err, ErrCorrupt):
			unreadable = append(unreadable, id)
			continue
		case err != nil:
			return nil, nil, err
		}
		maps.Copy(referenced, files(md))
	}
	return referenced, unreadable, nil
}

func ids64(ids []checkpoint.ID) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}
