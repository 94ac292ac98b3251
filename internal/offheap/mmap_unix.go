//go:build unix

package offheap

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func mmapWords(n int, resident bool) (mem []byte, w []uint64, err error) {
	mem, err = unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	if len(mem) >= hugeFrom {
		hugePages(mem)
	}
	if resident {
		populate(mem)
	}
	return mem, unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), n), nil
}

// hugeFrom is the smallest table backed by huge pages (on Linux, where
// the kernel has them for the asking: transparent_hugepage "madvise" or
// "always").
const hugeFrom = 4 << 20

func munmap(mem []byte) error { return unix.Munmap(mem) }
