package binpages

import "testing"

// exeResidentKB is how many kB of the test binary's droppable mappings are
// resident now.
func exeResidentKB(t *testing.T) uint64 {
	t.Helper()
	maps, err := droppableNow()
	if err != nil {
		t.Fatal(err)
	}
	var kb uint64
	for _, m := range maps {
		kb += m.rssKB
	}
	return kb
}

// Release drops the binary's pages: right after it, fewer of them are
// resident than before, though what runs after it maps some again.
func TestReleaseDropsTheBinarysPages(t *testing.T) {
	before := exeResidentKB(t)
	if before < 512 {
		t.Fatalf("only %d kB of the test binary resident: nothing to see", before)
	}
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := exeResidentKB(t)
	t.Logf("the binary's read-only pages: %d kB resident, %d kB released, %d kB after", before, n>>10, after)
	if n < int64(before)<<10/2 {
		t.Errorf("released %d kB of %d resident", n>>10, before)
	}
	if after >= before {
		t.Errorf("%d kB resident after Release, %d before", after, before)
	}
}
