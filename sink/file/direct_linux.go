package file

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// setDirect sets (on) or clears O_DIRECT on f's descriptor and reports
// whether the flag now has that state. false for a file with no descriptor
// (an in-memory file system) or one whose file system refuses direct I/O.
func setDirect(f vfs.File, on bool) bool {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return !on
	}
	fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	if err != nil {
		return false
	}
	if on {
		fl |= unix.O_DIRECT
	} else {
		fl &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(fd, unix.F_SETFL, fl)
	return err == nil
}
