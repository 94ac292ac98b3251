package state

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// immutable reports whether Pebble never modifies a file of this name after
// writing it: sstables and blob files. Such files are hard-linked into and
// out of checkpoints; every other file (MANIFEST, OPTIONS, WAL, markers) is
// copied, because Pebble appends to, recycles or rewrites it in the
// directory it has open.
func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// copyCheckpoint makes dst (an existing, empty directory) a private copy of
// the checkpoint in src, which it only reads. It returns the names of the
// immutable files, now shared between src and dst.
//
// The working copy needs no durability (after a crash it is rebuilt from the
// checkpoint), so dst is not synced beyond what vfs.Copy does per file.
func copyCheckpoint(fs vfs.FS, src, dst string) (map[string]struct{}, error) {
	names, err := fs.List(src)
	if err != nil {
		return nil, fmt.Errorf("list checkpoint: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("checkpoint %s is empty", src)
	}
	slices.Sort(names)
	shared := make(map[string]struct{})
	for _, name := range names {
		from, to := fs.PathJoin(src, name), fs.PathJoin(dst, name)
		fi, err := fs.Stat(from)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", from, err)
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("unexpected directory %s in checkpoint", from)
		}
		if immutable(name) {
			err = vfs.LinkOrCopy(fs, from, to)
			shared[name] = struct{}{}
		} else {
			err = vfs.Copy(fs, from, to)
		}
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", from, err)
		}
	}
	return shared, nil
}

// listSizes lists dir's files, sorted, and their total size.
func listSizes(fs vfs.FS, dir string) (names []string, bytes int64, err error) {
	if names, err = fs.List(dir); err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", dir, err)
	}
	slices.Sort(names)
	for _, name := range names {
		fi, err := fs.Stat(fs.PathJoin(dir, name))
		if err != nil {
			return nil, 0, fmt.Errorf("stat: %w", err)
		}
		bytes += fi.Size()
	}
	return names, bytes, nil
}

// restorePlan is what Open restores: the sources whose key groups meet the
// Store's, and the one whose full snapshot is copied into the working
// directory.
type restorePlan struct {
	srcs []Restore // Config.Restore's sources that hold some of Config.KeyGroups
	// primary indexes srcs: the source with a full snapshot that holds
	// the most of Config.KeyGroups, copied (hard-linked) into Dir rather
	// than read key by key. -1: none has a full snapshot.
	primary int
	// same: one source, which owned exactly Config.KeyGroups. Its chain
	// is restored as is, and extended.
	same bool
}

func planRestore(cfg Config) restorePlan {
	p := restorePlan{primary: -1}
	for _, r := range cfg.Restore {
		if !r.KeyGroups.Intersect(cfg.KeyGroups).Empty() {
			p.srcs = append(p.srcs, r)
		}
	}
	p.same = len(p.srcs) == 1 && p.srcs[0].KeyGroups == cfg.KeyGroups
	most := 0
	for i, r := range p.srcs {
		if n := r.KeyGroups.Intersect(cfg.KeyGroups).Len(); r.Chain.Base != "" && n > most {
			p.primary, most = i, n
		}
	}
	return p
}

// base is the full snapshot to copy into the working directory, or "".
func (p restorePlan) base() string {
	if p.primary < 0 {
		return ""
	}
	return p.srcs[p.primary].Chain.Base
}

// rescaled reports whether the Store's key groups are restored from other
// ranges than its own (see rescale).
func (p restorePlan) rescaled() bool { return len(p.srcs) > 0 && !p.same }

// restore fills the database, opened on a copy of plan.base(), from the
// sources, and records the max parallelism and the key layout in it
// (markerKey, layoutKey). A full snapshot of an older key layout restored
// as is (same key groups) is rewritten in the current one first; the chain
// it belongs to is still the one the next Checkpoint extends (its
// changelogs do not depend on the layout).
func (s *Store) restore(cfg Config, plan restorePlan) error {
	layout := currentLayout
	if base := plan.base(); base != "" {
		var err error
		if layout, err = checkMarker(s.db, base, s.maxPar); err != nil {
			return err
		}
	}
	var err error
	switch {
	case plan.same && layout != currentLayout:
		var n int
		if n, _, err = s.reshape(layout); err == nil {
			s.log.Info().Str("base", plan.base()).Int("from_layout", layout).Int("keys", n).Msg("state keys rewritten in the current layout")
			err = s.restoreChain(plan.srcs[0].Chain)
		}
	case plan.same:
		err = s.restoreChain(plan.srcs[0].Chain)
	case plan.rescaled():
		err = s.rescale(cfg, plan, layout)
	}
	if err != nil {
		return err
	}
	// The markers go into a table of their own (the restored state is
	// flushed before them, they are flushed alone): a table that holds
	// state too would, once Expire cut its state away, stay on disk for
	// their sake (expire.go).
	if err := s.flushWait(s.db); err != nil {
		return fmt.Errorf("flush the restored state: %w", err)
	}
	if err := s.db.Set(markerKey, []byte(strconv.Itoa(s.maxPar)), pebble.NoSync); err != nil {
		return fmt.Errorf("record the max parallelism: %w", err)
	}
	if err := s.db.Set(layoutKey, []byte(strconv.Itoa(currentLayout)), pebble.NoSync); err != nil {
		return fmt.Errorf("record the key layout: %w", err)
	}
	if err := s.flushWait(s.db); err != nil {
		return fmt.Errorf("flush the state's markers: %w", err)
	}
	return nil
}

// restoreChain applies c's changelogs to its base, copied into the working
// directory, and makes c the chain the next Checkpoint extends: the files
// it consists of stay referenced.
func (s *Store) restoreChain(c Chain) error {
	s.chain = chain{base: c.Base, named: true}
	if c.Base != "" {
		var err error
		if s.chain.baseFiles, s.chain.baseBytes, err = listSizes(s.fs, c.Base); err != nil {
			return err
		}
	}
	for _, path := range c.Changelogs {
		size, err := applyChangelog(s.fs, path, s.db, s.maxPar, s.keyGroups)
		if err != nil {
			return err
		}
		s.chain.add(changelog{path: path, size: size})
	}
	return nil
}
