package offheap

import "golang.org/x/sys/unix"

// hugePages asks for mem to be backed by huge pages: a hint, without which
// it has 4 KiB pages.
func hugePages(mem []byte) { _ = unix.Madvise(mem, unix.MADV_HUGEPAGE) }
