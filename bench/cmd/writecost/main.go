// Command writecost measures the CPU that writing a file costs under the
// file sink's ways of handling the page cache: plain writes, writes with
// background write-back started every 4 MiB (sync_file_range), the same
// with the pages dropped 16 MiB behind (posix_fadvise DONTNEED), as
// sink/file/part.go does where direct I/O is refused, and direct I/O
// (O_DIRECT, sink/file/direct.go). It writes --size bytes in --write byte
// writes (256 KiB) per mode, in the order given, fsyncs, and prints elapsed
// time and the process's CPU per GB (the kernel's write-back threads, which
// the buffered modes also use, are not counted). Linux only.
//
//	go run ./bench/cmd/writecost --dir .cache/writecost plain writeback drop drop writeback plain
//	go run ./bench/cmd/writecost --dir .cache/writecost --write 1048576 drop direct drop direct
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	dir := flag.String("dir", ".cache/writecost", "directory for the test file (on the disk under test, not tmpfs)")
	size := flag.Int64("size", 3<<30, "bytes written per mode")
	writeSize = flag.Int("write", 256<<10, "bytes per write (a multiple of 4096)")
	flag.Parse()
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fail(err)
	}
	for _, mode := range flag.Args() {
		if err := run(filepath.Join(*dir, "f"), mode, *size); err != nil {
			fail(err)
		}
		time.Sleep(3 * time.Second) // let the last write-back settle
	}
}

var writeSize *int

// alignedBuffer returns n bytes starting at a 4096-byte boundary, as
// O_DIRECT needs.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+4096)
	skip := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[skip : skip+n]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "writecost:", err)
	os.Exit(1)
}

func run(path, mode string, total int64) error {
	if mode != "plain" && mode != "writeback" && mode != "drop" && mode != "direct" {
		return fmt.Errorf("mode %q: want plain, writeback, drop or direct", mode)
	}
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if mode == "direct" {
		flags |= unix.O_DIRECT
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	defer f.Close()
	buf := alignedBuffer(*writeSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	fd := int(f.Fd())
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	var off, started, dropped int64
	for off < total {
		n, err := f.Write(buf)
		if err != nil {
			return err
		}
		off += int64(n)
		if mode == "plain" || mode == "direct" {
			continue
		}
		if to := off - 1<<20; to-started >= 4<<20 {
			_ = unix.SyncFileRange(fd, started, to-started, unix.SYNC_FILE_RANGE_WRITE)
			started = to
		}
		if to := started - 16<<20; mode == "drop" && to-dropped >= 4<<20 {
			_ = unix.Fadvise(fd, dropped, to-dropped, unix.FADV_DONTNEED)
			dropped = to
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if mode == "drop" {
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	}
	el := time.Since(t0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano()) + time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano())
	gb := float64(total) / 1e9
	fmt.Printf("%-9s %.2f GB in %5.2fs (%4.0f MB/s, fsync included), %.2f CPU s per GB\n", mode, gb, el.Seconds(), gb*1e3/el.Seconds(), cpu.Seconds()/gb)
	return nil
}
