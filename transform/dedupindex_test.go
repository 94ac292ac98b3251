package transform

import (
	"math/rand/v2"
	"testing"
)

// A bucket's index answers, for every fingerprint put (the high half of a
// value's hash), the latest first sighting put under it, rounded up to its
// resolution and never earlier; for every other, absent. It grows past its
// first table, and at indexCap values it drops its table (lookups read the
// KV).
func TestBucketIndexKeepsTheLatestSightingPerFingerprint(t *testing.T) {
	for _, width := range []int64{60_000, 400 * 24 * 3600 * 1000} { // a minute; 400 days, past 2^32 ms
		rng := rand.New(rand.NewPCG(1, uint64(width)))
		s := newBucketIndex(7, width)
		want := map[uint64]int64{} // fingerprint -> latest first sighting
		for range 50_000 {
			h, first := rng.Uint64(), 7*width+rng.Int64N(width)
			s.put(h, first)
			if old, ok := want[h>>32]; !ok || first > old {
				want[h>>32] = first
			}
			if rng.IntN(4) == 0 { // the same value again, later or earlier
				again := 7*width + rng.Int64N(width)
				s.put(h, again)
				want[h>>32] = max(want[h>>32], again)
			}
		}
		if len(s.slots) <= 1024 {
			t.Fatalf("width %d: the table did not grow (%d slots for %d values)", width, len(s.slots), s.n)
		}
		for fp, first := range want {
			got, ok := s.get(fp << 32)
			if !ok || got < first || got > first+s.res {
				t.Fatalf("width %d: fingerprint %x: latest %d (found %v), want %d rounded up to %d ms", width, fp, got, ok, first, s.res)
			}
		}
		for range 10_000 {
			h := rng.Uint64()
			if _, put := want[h>>32]; !put {
				if _, ok := s.get(h); ok {
					t.Fatalf("width %d: fingerprint %x never put, found", width, h>>32)
				}
			}
		}
	}

	defer func(c int) { indexCap = c }(indexCap)
	indexCap = 100
	x := index{width: 60_000}
	x.reset()
	for i := range uint64(101) {
		x.add(3, i<<32, 3*60_000)
	}
	if got := x.lookup(3, 5<<32, 0); got != unknown {
		t.Errorf("a bucket past indexCap answers %d, want unknown (%d)", got, unknown)
	}
}
