package offheap

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/connector-dev/connector/internal/mincore"
)

// residentPages counts the pages of mem the process has resident.
func residentPages(t *testing.T, mem []byte) (resident, pages int) {
	t.Helper()
	resident, pages, err := mincore.Pages(mem)
	if err != nil {
		t.Fatal(err)
	}
	return resident, pages
}

// A resident table's pages are all in memory from the start, in one call,
// zeroed; a plain one's come one fault at a time as they are written.
func TestAResidentTableIsInMemoryFromTheStart(t *testing.T) {
	const n = 1 << 18 // 2 MiB
	plain := New(n)
	defer plain.Free()
	if got, _ := residentPages(t, plain.mem); got != 0 {
		t.Errorf("a new plain table has %d pages resident, want none", got)
	}
	res := NewResident(n)
	defer res.Free()
	if got, all := residentPages(t, res.mem); got != all {
		t.Errorf("a new resident table has %d of its %d pages resident", got, all)
	}
	for i, v := range res.W {
		if v != 0 {
			t.Fatalf("word %d = %d, want a zeroed table", i, v)
		}
	}
	res.W[n-1] = 1
}

// No table asks for huge pages (MADV_HUGEPAGE, "hg" among its mapping's
// VmFlags in /proc/self/smaps): with the kernel's default defrag setting,
// such a region is compacted for at once, on the worker that maps it
// (see the package doc). The tables are as large as a bucket's of the
// bench's dedup (5 MB) and a full one's (32 MB).
func TestTablesDoNotAskForHugePages(t *testing.T) {
	for _, n := range []int{5 << 20 / 8, 32 << 20 / 8} {
		for _, w := range []*Words{New(n), NewResident(n)} {
			flags := vmFlags(t, w.mem)
			w.Free()
			if slices.Contains(flags, "hg") {
				t.Errorf("a table of %d MiB is mapped with VmFlags %v: it asks for huge pages", n*8>>20, flags)
			}
		}
	}
}

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that
// holds mem's first byte.
func vmFlags(t *testing.T, mem []byte) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	at := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	in := false
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = l <= at && at < h
				continue
			}
		}
		if in && fields[0] == "VmFlags:" {
			return fields[1:]
		}
	}
	t.Fatalf("no mapping of /proc/self/smaps holds %#x", at)
	return nil
}
