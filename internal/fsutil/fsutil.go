// Package fsutil holds the small filesystem steps that crash safety is made
// of, shared by the checkpoint store and the file sink. It owns no policy.
package fsutil

import (
	"fmt"
	"io"

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

// Truncate cuts the file name back to size bytes and fsyncs it. A file
// with a descriptor (the OS filesystem) is truncated in place; one without
// (vfs.NewMem in tests) is rewritten: its first size bytes are copied to a
// temporary file that is fsynced and renamed over it, and the directory is
// fsynced. A file shorter than size is an error: nothing is invented.
func Truncate(fs vfs.FS, name string, size int64) error {
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat %s: %w", name, err)
	}
	if st.Size() < size {
		_ = f.Close()
		return fmt.Errorf("%s holds %d bytes, fewer than the %d to keep", name, st.Size(), size)
	}
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if st.Size() > size {
			if err := truncateFd(fd, size); err != nil {
				_ = f.Close()
				return fmt.Errorf("truncate %s: %w", name, err)
			}
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return fmt.Errorf("sync %s: %w", name, err)
		}
		return f.Close()
	}
	defer f.Close()
	if st.Size() == size {
		return nil
	}
	tmp := name + ".truncating"
	out, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := io.Copy(out, io.NewSectionReader(f, 0, size)); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s: %w", name, err)
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return SyncDir(fs, fs.PathDir(name))
}
