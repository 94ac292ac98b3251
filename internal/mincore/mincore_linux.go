package mincore

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pages returns how many of mem's pages are resident, of how many.
func Pages(mem []byte) (resident, pages int, err error) {
	if len(mem) == 0 {
		return 0, 0, nil
	}
	vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, 0, errno
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec), nil
}
