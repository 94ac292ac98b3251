package file

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// startWriteBackRange asks Linux to start writing [off, off+n) of f to disk
// and returns at once (sync_file_range with SYNC_FILE_RANGE_WRITE only).
// Unlike vfs.File.SyncTo it does not first wait for earlier write-back, so
// the writer is not paced to the disk: the pre-commit's fsync, which runs
// in the background, waits instead. false: f has no descriptor (an
// in-memory file system); the caller falls back to SyncTo.
func startWriteBackRange(f vfs.File, off, n int64) bool {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return false
	}
	_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE) // a hint: errors surface at fsync
	return true
}

// dropCachedRange drops the clean pages of [off, off+n) of f from the page
// cache (posix_fadvise DONTNEED; n 0: to the end of the file) without waiting
// for any write-back. A hint: it does nothing to an in-memory file system.
func dropCachedRange(f vfs.File, off, n int64) {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		_ = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
	}
}
