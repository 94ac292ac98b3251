package transform

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A bucket's index, asked for a fingerprint (the high half of a value's
// hash) and a cut-off, names every entry of that fingerprint first seen
// after the cut-off (it may name more), latest first; it answers "expired"
// only when every entry of the fingerprint was first seen at the cut-off
// or before. Built entry by entry (a running Dedup, times jittered as
// records of several partitions are) or from the same entries in any order
// (a load), with fingerprints shared by several entries.
func TestBucketIndexNamesEveryEntryThatMayBeWithinTheCutoff(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type entry struct {
		n     uint32
		first int64
	}
	fps := make([]uint64, 20_000)
	for i := range fps {
		fps[i] = rng.Uint64() >> 32
	}
	byFP := map[uint64][]entry{}
	var all []entry
	var fpOf []uint64
	running := &bucketIndex{slots: make([]uint64, 1024)}
	for i := range 60_000 {
		fp := fps[rng.IntN(len(fps))] // about three entries a fingerprint
		first := int64(i)*10 + rng.Int64N(500) - 250
		n, numbered := running.add(fp<<32|rng.Uint64()>>32, first)
		if !numbered || n != uint32(i) {
			t.Fatalf("entry %d numbered %d (%v)", i, n, numbered)
		}
		byFP[fp] = append(byFP[fp], entry{n, first})
		all = append(all, entry{n, first})
		fpOf = append(fpOf, fp)
	}
	loaded := &bucketIndex{slots: make([]uint64, 1024)}
	for _, i := range rng.Perm(len(all)) {
		loaded.put(fpOf[i], all[i].n, all[i].first)
	}
	loaded.seal()
	if loaded.next != running.next || running.next != uint32(len(all)) {
		t.Fatalf("next entry number %d after a load, %d running, want %d", loaded.next, running.next, len(all))
	}

	for name, s := range map[string]*bucketIndex{"running": running, "loaded": loaded} {
		for range 20_000 {
			fp := fps[rng.IntN(len(fps))]
			cutoff := rng.Int64N(600_000)
			got, expired := s.numbered(fp<<32, cutoff, nil)
			if !slices.IsSortedFunc(got, func(a, b uint32) int { return int(b) - int(a) }) {
				t.Fatalf("%s: fingerprint %x: entries %v, not latest first", name, fp, got)
			}
			for _, e := range byFP[fp] {
				if e.first > cutoff && (expired || !slices.Contains(got, e.n)) {
					t.Fatalf("%s: fingerprint %x, cut-off %d: entry %d first seen at %d not named (named %v, expired %v)",
						name, fp, cutoff, e.n, e.first, got, expired)
				}
			}
			if expired && len(got) > 0 {
				t.Fatalf("%s: expired, and entries named: %v", name, got)
			}
		}
		absent := uint64(0xdead_beef)
		for slices.Contains(fps, absent) {
			absent++
		}
		if got, expired := s.numbered(absent<<32, 0, nil); len(got) != 0 || expired {
			t.Errorf("%s: a fingerprint never put: named %v, expired %v", name, got, expired)
		}
	}
}

// A table grows by moving its values a few at each put: while they move,
// some in the old table and some in the new, a lookup still names every
// entry of a fingerprint, latest first, whether the fingerprint's slot has
// moved or not, and an entry put for a fingerprint whose slot has not
// moved yet is kept with it. Checked after every put for the fingerprints
// just put and at random, and in full at points inside each move.
func TestBucketIndexNamesEveryEntryWhileItsTableGrows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fps := make([]uint64, 30_000)
	for i := range fps {
		fps[i] = rng.Uint64() >> 32
	}
	byFP := map[uint64][]uint32{}
	var seen []uint64
	s := &bucketIndex{slots: make([]uint64, 1024)}
	check := func(fp uint64) {
		t.Helper()
		got, expired := s.numbered(fp<<32, -1, nil)
		want := slices.Clone(byFP[fp])
		slices.Reverse(want)
		if expired || !slices.Equal(got, want) {
			t.Fatalf("fingerprint %x, table %d slots, old %d slots moved %d: named %v (expired %v), want %v",
				fp, len(s.slots), len(s.old), s.moved, got, expired, want)
		}
	}
	var full, againInOld, grows int
	for i := range 90_000 {
		fp := fps[rng.IntN(len(fps))]
		if s.old != nil {
			if _, ok := s.inOld(fp); ok {
				againInOld++
			}
		}
		before := len(s.slots)
		if n, numbered := s.add(fp<<32|rng.Uint64()>>32, int64(i)); !numbered || n != uint32(i) {
			t.Fatalf("entry %d numbered %d (%v)", i, n, numbered)
		}
		if len(s.slots) != before {
			grows++
		}
		if byFP[fp] == nil {
			seen = append(seen, fp)
		}
		byFP[fp] = append(byFP[fp], uint32(i))
		check(fp)
		for range 4 {
			check(seen[rng.IntN(len(seen))])
		}
		if s.old != nil && (s.moved == len(s.old)/4 || s.moved == len(s.old)/2 || s.moved == len(s.old)*3/4) {
			full++
			for _, fp := range seen {
				check(fp)
			}
		}
	}
	if grows < 5 || full < 2*grows || againInOld == 0 {
		t.Fatalf("the test did not exercise the moves: %d grows, %d full checks inside one, %d entries put for unmoved slots",
			grows, full, againInOld)
	}
	t.Logf("%d grows to %d slots, %d full checks inside a move, %d entries put for unmoved slots", grows, len(s.slots), full, againInOld)
}

// At indexCap fingerprints a bucket numbers no more entries: they are
// written by value, and a Bloom filter says which lookups must read them.
func TestBucketIndexPastItsCapWritesByValue(t *testing.T) {
	defer func(c int) { indexCap = c }(indexCap)
	indexCap = 100
	s := &bucketIndex{slots: make([]uint64, 1024)}
	for i := range uint64(100) {
		if _, numbered := s.add(i<<32, 0); !numbered {
			t.Fatalf("entry %d of 100 not numbered", i)
		}
	}
	for i := uint64(100); i < 110; i++ {
		if _, numbered := s.add(i<<32, 0); numbered {
			t.Fatalf("entry %d numbered past indexCap", i)
		}
	}
	for i := uint64(100); i < 110; i++ {
		if !s.mayHoldByValue(i << 32) {
			t.Errorf("by-value entry %d not in the filter", i)
		}
	}
	if s.mayHoldByValue(5<<32) && s.mayHoldByValue(6<<32) && s.mayHoldByValue(7<<32) {
		t.Error("the filter says yes to numbered fingerprints it was never given")
	}
}
