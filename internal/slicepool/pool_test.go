package slicepool

import "testing"

func TestGetReturnsAnEmptySliceWithTheCapacityAsked(t *testing.T) {
	var p Pool[int]
	s := p.Get(4)
	if len(s) != 0 || cap(s) < 4 {
		t.Fatalf("Get(4): len %d cap %d", len(s), cap(s))
	}
	p.Put(append(s, 1, 2, 3))
	for _, n := range []int{2, 4, 100} {
		s := p.Get(n)
		if len(s) != 0 || cap(s) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(s), cap(s))
		}
		p.Put(s)
	}
	p.Put(nil) // an empty slice is not kept
	if s := p.Get(1); cap(s) < 1 {
		t.Fatalf("Get(1) after Put(nil): cap %d", cap(s))
	}
}

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	var p Pool[int]
	p.Put(p.Get(64))
	allocs := testing.AllocsPerRun(100, func() { p.Put(p.Get(64)) })
	if allocs > 0 {
		t.Fatalf("Get+Put allocated %.1f times per run, want 0", allocs)
	}
}
