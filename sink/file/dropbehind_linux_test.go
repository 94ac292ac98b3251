package file

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/connector-dev/connector/internal/mincore"
	"github.com/connector-dev/connector/record"
)

// A part leaves none of its pages in the page cache once it is durable: a
// sink does not read its output back. Written with direct I/O (direct.go),
// and through the page cache where that is refused (dropBehind, finish).
// Needs a disk's file system under TMPDIR, not tmpfs.
func TestDurablePartLeavesNothingInThePageCache(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(t *testing.T) {
			testDurablePartLeavesNothingInThePageCache(t, direct)
		})
	}
}

func testDurablePartLeavesNothingInThePageCache(t *testing.T, direct bool) {
	dir := diskDir(t)
	s, err := New(Config{Path: dir, Job: "orders", RollSize: 1 << 30, RollOnCheckpoint: true}, vfs.Default, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s.noDirect = !direct
	w := newTestWriter(t, s, 0)
	value := []byte(`{"pad":"` + strings.Repeat("x", 1000) + `"}`)
	const n = 40_000 // ~40 MiB: past dropBehindLag and several write-back starts
	for i := range n {
		if err := w.Write(ctx, &record.Record{Topic: "orders", Offset: int64(i), Value: value}); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
	if p := w.(*fileWriter).open[""]; p.direct != direct {
		t.Fatalf("the part is written with direct I/O: %v, want %v", p.direct, direct)
	}
	commit(t, s, preCommit(t, w, 1))

	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil || len(names) != 1 {
		t.Fatalf("visible parts: %v (%v), want one", names, err)
	}
	resident, pages := residentPages(t, names[0])
	if pages < (n*len(value))/os.Getpagesize() {
		t.Fatalf("the part has %d pages, want at least %d", pages, n*len(value)/os.Getpagesize())
	}
	if resident > pages/20 {
		t.Fatalf("%d of the durable part's %d pages are still in the page cache, want at most 5%%", resident, pages)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(b, []byte("\n")); got != n || !bytes.HasPrefix(b, value) {
		t.Fatalf("the part holds %d lines (starting %.20q), want %d of the value", got, b, n)
	}
}

// residentPages counts the pages of the file at path in the page cache
// (mincore of a read-only mapping, which itself reads nothing).
func residentPages(t *testing.T, path string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	resident, pages, err = mincore.Pages(m)
	if err != nil {
		t.Fatal(err)
	}
	return resident, pages
}

// onTmpfs reports whether dir is on tmpfs.
func onTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return fs.Type == unix.TMPFS_MAGIC
}
