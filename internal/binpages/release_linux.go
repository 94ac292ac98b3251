package binpages

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Release drops the executable's mappings that droppable selects from the
// process's page tables, and returns how many bytes of them were
// resident. An error leaves the pages as they were (a mapping dropped
// before it stays dropped: that is harmless).
func Release() (int64, error) {
	maps, err := droppableNow()
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range maps {
		// The range is a mapping of the file, not Go memory: madvise by
		// address (unix.Madvise takes a slice).
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), unix.MADV_DONTNEED); e != 0 {
			return released, fmt.Errorf("binpages: madvise %x-%x: %w", m.start, m.end, e)
		}
		released += int64(m.rssKB) << 10
	}
	return released, nil
}

// droppableNow is droppable of the process's mappings now.
func droppableNow() ([]mapping, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return nil, fmt.Errorf("binpages: the executable: %w", err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("binpages: %w", err)
	}
	maps, err := parseSmaps(b)
	if err != nil {
		return nil, err
	}
	exe := fileID{dev: fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)), inode: st.Ino}
	return droppable(maps, exe), nil
}
