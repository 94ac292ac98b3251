package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Handle describes a snapshot: where it is and what it cost.
type Handle struct {
	// Dir is the snapshot directory, as passed to Snapshot. Restore it as
	// the Base of a Chain (Config.Restore).
	Dir string
	// Files are the names of the files in Dir, sorted. The runtime records
	// them (joined to Dir, relative to the state root) in the checkpoint's
	// metadata so that the checkpoint store can delete them once no retained
	// checkpoint references them.
	Files []string
	// Bytes is the total size of Files. Files shared with other checkpoints
	// count fully here although they occupy the disk once.
	Bytes int64
	// SharedFiles counts the immutable files that the previous snapshot of
	// this Store (or the checkpoint it was restored from) also held: hard
	// links to the same data, not copied again.
	SharedFiles int
	// Duration is how long Snapshot took, the memtable flush included.
	Duration time.Duration
}

// Snapshot makes a consistent, durable copy of the current state in dir,
// which must not exist; its parents are created: a full snapshot, taken
// synchronously (Checkpoint takes one when a changelog would be too large):
// every write made before the call is in the snapshot, no later write is.
// It costs a memtable flush (with the WAL on: a sync of the WAL and a copy
// of the live WAL files instead), a hard link per sstable and a copy of the
// MANIFEST and OPTIONS.
//
// Durability is Pebble's Checkpoint's: it syncs what it writes, the
// directories it creates and dir itself, and hard-links sstables Pebble
// synced when it wrote them. So when Snapshot returns nil, dir survives a
// crash; crash_test.go checks it on a filesystem that drops every unsynced
// write, whatever the version of Pebble underneath.
//
// On error, dir is removed (best-effort) and the Store stays usable: no
// write is lost and a later Snapshot may succeed. On success the caller owns
// dir: the Store never modifies or deletes it, even after Close.
func (s *Store) Snapshot(dir string) (Handle, error) {
	if s.db == nil {
		return Handle{}, ErrClosed
	}
	if err := s.apply(); err != nil {
		return Handle{}, fmt.Errorf("snapshot to %s: %w", dir, err)
	}
	start := time.Now()
	// With the WAL disabled (see open), the checkpoint holds only what is
	// in sstables, so the memtable is flushed first. Nothing writes in
	// between: the Store has a single caller.
	if !s.wal {
		if err := s.flushWait(s.db); err != nil {
			return Handle{}, fmt.Errorf("snapshot to %s: flush: %w", dir, err)
		}
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return Handle{}, fmt.Errorf("snapshot to %s: %w", dir, err)
	}
	h, shared, err := s.describe(dir)
	if err != nil {
		s.release(dir) // Pebble removes dir itself when Checkpoint fails
		return Handle{}, fmt.Errorf("snapshot to %s: %w", dir, err)
	}
	s.shared = shared
	h.Duration = time.Since(start)
	s.log.Debug().Str("snapshot", dir).Int("files", len(h.Files)).Int("shared_files", h.SharedFiles).
		Int64("bytes", h.Bytes).Dur("duration_ms", h.Duration).Msg("state snapshot taken")
	return h, nil
}

// describe lists a fresh snapshot. Within one Store Pebble never reuses a
// file number, so an immutable file whose name the previous snapshot also
// held is the same file, linked again (if dir is on the same device as the
// working directory; otherwise Pebble had to copy it, and nothing counts as
// shared).
func (s *Store) describe(dir string) (h Handle, shared map[string]struct{}, err error) {
	names, err := s.fs.List(dir)
	if err != nil {
		return Handle{}, nil, fmt.Errorf("list: %w", err)
	}
	slices.Sort(names)
	linked, err := s.sameDevice(dir)
	if err != nil {
		return Handle{}, nil, err
	}
	h = Handle{Dir: dir, Files: names}
	shared = make(map[string]struct{})
	for _, name := range names {
		fi, err := s.fs.Stat(s.fs.PathJoin(dir, name))
		if err != nil {
			return Handle{}, nil, fmt.Errorf("stat: %w", err)
		}
		h.Bytes += fi.Size()
		if !immutable(name) {
			continue
		}
		shared[name] = struct{}{}
		if _, ok := s.shared[name]; ok && linked {
			h.SharedFiles++
		}
	}
	return h, shared, nil
}

func (s *Store) sameDevice(dir string) (bool, error) {
	a, err := s.fs.Stat(dir)
	if err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	b, err := s.fs.Stat(s.dir)
	if err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	if a.DeviceID() != b.DeviceID() {
		s.log.Warn().Str("snapshot", dir).
			Msg("state snapshot is on another filesystem than the working dir: sstables are copied, not linked")
		return false, nil
	}
	return true, nil
}
