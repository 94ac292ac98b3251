package offheap

import "golang.org/x/sys/unix"

// populate makes mem's pages resident and writable now, in one call (Linux
// 5.14 and later; on others it stays as it was: a hint).
func populate(mem []byte) { _ = unix.Madvise(mem, unix.MADV_POPULATE_WRITE) }
