//go:build unix

package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// LockMode takes the lock that keeps a job's processes of the two modes
// apart on one checkpoint.dir: a single-mode process holds it exclusively
// (group false), every group-mode member shared (group true), each for its
// whole life. So group members run beside each other, but never beside a
// single-mode process of the job, which would read the same partitions
// and write the same records again under its own name. The lock is an
// fcntl lock on dir's MODE file, released when the process dies; an error
// wraps ErrLocked when a process of the other mode holds it. A second
// single-mode process gets no lock and no error: refusing it is the
// checkpoint store's lock's business, as it always was.
func LockMode(dir string, group bool) (io.Closer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock mode: %w", err)
	}
	name := filepath.Join(dir, modeLockName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock mode: %w", err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if group {
		lk.Type = syscall.F_RDLCK
	}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		if !heldByOther(err) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		held := lk
		gerr := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &held)
		_ = f.Close()
		if gerr == nil && !group && held.Type == syscall.F_WRLCK {
			return io.NopCloser(nil), nil // another single-mode process
		}
		other := "a member of the job's group (instances.mode: group), or a command reading the job's checkpoints (checkpoints, txns)"
		if group {
			other = "a single-mode process of the job (instances.mode: single)"
		}
		return nil, fmt.Errorf("lock file %s is %w, %s (pid %d): one job's processes all run in one mode on one checkpoint.dir (%w)", name, ErrLocked, other, held.Pid, err)
	}
	return f, nil // closing the file releases the lock
}
