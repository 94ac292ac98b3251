package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/keygroup"
)

// Config says where a Store keeps its working copy, which key groups it
// owns and what it starts from.
type Config struct {
	// Dir is the worker's working directory, for example
	// <state.dir>/work/worker-2. Open deletes everything in it, and in the
	// scratch directory Dir+".rescale" beside it.
	Dir string
	// MaxParallelism is the job's number of key groups (1 to
	// keygroup.MaxLimit); 0 means keygroup.DefaultMax. It must never change
	// for a job's state: every snapshot and changelog records it, and Open
	// refuses to restore one written with another.
	MaxParallelism int
	// KeyGroups is the range of key groups the Store owns, its worker's
	// keygroup.RangeOf: non-empty, within 0..MaxParallelism-1.
	KeyGroups keygroup.Range
	// Restore is what the state starts from: the snapshots of the workers
	// that owned KeyGroups before, each with the range it owned; none for
	// empty state. Their ranges must not overlap; a source whose range
	// misses KeyGroups is not read. Only read, never modified; no path may
	// lie inside Dir.
	//
	// One source whose range is KeyGroups (same parallelism as before)
	// restores that chain as is, and the next Checkpoint extends it. Any
	// other set of sources (a rescale) builds the state from the parts of
	// each that fall into KeyGroups, and the next Checkpoint starts a chain
	// of its own with a full snapshot.
	Restore []Restore
	// FullSnapshotAfter is how many bytes of changelogs Checkpoint lets
	// pile up after the last full snapshot before it takes the next one in
	// the background (see Checkpoint). It bounds the work of a restore to
	// about twice that (the changelogs written while the next full snapshot
	// is taken). 0 means DefaultFullSnapshotAfter.
	FullSnapshotAfter int64
	// FS is the filesystem for Dir, the restored files and snapshot
	// directories; nil means vfs.Default.
	FS vfs.FS
	// Release receives the snapshot files and directories the Store wrote
	// and will never hand out: a changelog whose write failed, a full
	// snapshot that a newer one made useless before any chain named it, a
	// snapshot it could not describe. Outside its working directory the
	// Store deletes nothing itself: in the runtime the checkpoint store,
	// the one owner of the state root's files, deletes them (Release is
	// store.Release). It may be called from the goroutine that runs a
	// Pending's Wait. Nil means the Store removes them itself (tests, and
	// uses without a checkpoint store).
	Release func(paths ...string)
}

// Restore is one old worker's snapshot and the key groups it owned when it
// took it.
type Restore struct {
	// Chain is the snapshot; Open reads its Base and Changelogs only.
	Chain Chain
	// KeyGroups is the range the old worker owned (Config.KeyGroups of the
	// Store that wrote Chain). Chain holds no key outside it.
	KeyGroups keygroup.Range
}

// DefaultFullSnapshotAfter is Config.FullSnapshotAfter's default: a restore
// applies a few seconds' worth of changelogs at most.
const DefaultFullSnapshotAfter = 64 << 20

// withDefaults fills Config's zero values.
func (c Config) withDefaults() Config {
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.MaxParallelism == 0 {
		c.MaxParallelism = keygroup.DefaultMax
	}
	if c.FullSnapshotAfter <= 0 {
		c.FullSnapshotAfter = DefaultFullSnapshotAfter
	}
	if c.Release == nil {
		fs := c.FS
		c.Release = func(paths ...string) {
			for _, p := range paths {
				_ = fs.RemoveAll(p)
			}
		}
	}
	return c
}

// scratchDir is where a rescaled restore opens private copies of the
// sources' full snapshots.
func (c Config) scratchDir() string { return filepath.Clean(c.Dir) + ".rescale" }

// validate returns every problem of c (after withDefaults) at once.
func (c Config) validate() error {
	if c.Dir == "" {
		return errors.New("state: Config.Dir is empty")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("state: "+format, args...)) }
	if err := keygroup.Validate(c.MaxParallelism); err != nil {
		bad("Config.MaxParallelism: %w", err)
	}
	all := keygroup.Range{Start: 0, End: c.MaxParallelism}
	if c.KeyGroups.Empty() || c.KeyGroups.Intersect(all) != c.KeyGroups {
		bad("Config.KeyGroups %s is not a non-empty range within %s", c.KeyGroups, all)
	}
	dirs := []string{filepath.Clean(c.Dir), c.scratchDir()}
	for i, r := range c.Restore {
		if r.KeyGroups.Empty() || r.KeyGroups.Intersect(all) != r.KeyGroups {
			bad("Config.Restore[%d].KeyGroups %s is not a non-empty range within %s", i, r.KeyGroups, all)
		}
		for j := range i {
			if o := c.Restore[j].KeyGroups; !o.Intersect(r.KeyGroups).Empty() {
				bad("Config.Restore[%d].KeyGroups %s overlaps Config.Restore[%d].KeyGroups %s", i, r.KeyGroups, j, o)
			}
		}
		for _, p := range append([]string{r.Chain.Base}, r.Chain.Changelogs...) {
			if p == "" {
				continue
			}
			from := filepath.Clean(p)
			for _, dir := range dirs {
				if from == dir || strings.HasPrefix(from, dir+string(filepath.Separator)) {
					bad("%s to restore lies inside %s, which Open wipes", p, dir)
				}
			}
		}
	}
	return errors.Join(errs...)
}
