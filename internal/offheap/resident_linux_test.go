package offheap

import (
	"testing"

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
	const n = 1 << 18 // 2 MiB: 4 KiB pages (huge pages are asked for from 4 MiB)
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
