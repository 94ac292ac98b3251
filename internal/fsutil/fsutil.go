// Package fsutil holds the small filesystem steps that crash safety is made
// of, shared by the checkpoint store and the file sink. It owns no policy.
package fsutil

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// SyncDir fsyncs a directory, making the names created, renamed or removed
// in it durable.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("close dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAll creates dir and its missing parents and makes every entry it
// may have created durable: it fsyncs each ancestor of dir up to the root
// (a directory created and never synced in its parent may vanish in a
// crash, with everything in it).
func MkdirAll(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for {
		parent := fs.PathDir(dir)
		if parent == dir {
			return nil
		}
		if err := SyncDir(fs, parent); err != nil {
			return err
		}
		dir = parent
	}
}
