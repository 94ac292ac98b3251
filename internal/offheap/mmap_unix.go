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
	if resident {
		populate(mem)
	}
	return mem, unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), n), nil
}

func munmap(mem []byte) error { return unix.Munmap(mem) }
