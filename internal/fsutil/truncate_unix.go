//go:build unix

package fsutil

import "golang.org/x/sys/unix"

func truncateFd(fd uintptr, size int64) error { return unix.Ftruncate(int(fd), size) }
