package state

import (
	"fmt"
	"slices"
	"strings"

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
