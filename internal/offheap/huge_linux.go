package offheap

import "golang.org/x/sys/unix"

// hugePages asks for mem to be backed by huge pages: a hint, without which
// it has 4 KiB pages.
func hugePages(mem []byte) { _ = unix.Madvise(mem, unix.MADV_HUGEPAGE) }

// populate makes mem's pages resident and writable now, in one call (Linux
// 5.14 and later; on others it stays as it was: a hint).
func populate(mem []byte) { _ = unix.Madvise(mem, unix.MADV_POPULATE_WRITE) }
