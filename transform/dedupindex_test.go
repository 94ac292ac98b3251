package transform

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/offheap"
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
	// Times run from -250 to 600,250: the bucket holds most of them, those
	// outside have no time in their slot.
	const start, width = 0, 500_000
	running := newBucketIndex(start, width, 0)
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
	loaded := newBucketIndex(start, width, 0)
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

// An entry's slot bounds its first sighting to a 1/1023 of the bucket's
// width: a value whose latest entry was first seen more than that before
// the cut-off is expired without a KV read, though its block of entries
// holds entries of much later times (two partitions an hour apart in record
// time, their records interleaved). Entries that share a fingerprint keep
// the bound of their block.
func TestBucketIndexBoundsAnEntryByItsSlot(t *testing.T) {
	const start, width = 1_000_000, 3_600_000 // an hour
	unit := int64(width+qUnknown-1) / qUnknown
	s := newBucketIndex(start, width, 0)
	first := func(i int) int64 { return start + int64(i/2) + int64(i%2)*width/2 }
	for i := range 10_000 {
		if n, numbered := s.add(uint64(i+1)<<32, first(i)); !numbered || n != uint32(i) {
			t.Fatalf("entry %d numbered %d (%v)", i, n, numbered)
		}
	}
	shared := uint64(20_000) << 32 // entries 10,000 and 10,001
	s.add(shared, first(10_000))
	s.add(shared, first(10_001))
	for i := range 10_000 {
		fp := uint64(i+1) << 32
		if got, expired := s.numbered(fp, first(i)+unit, nil); !expired || len(got) > 0 {
			t.Fatalf("entry %d first seen at %d, cut-off a unit (%d ms) later: named %v, expired %v", i, first(i), unit, got, expired)
		}
		if got, expired := s.numbered(fp, first(i)-1, nil); expired || !slices.Equal(got, []uint32{uint32(i)}) {
			t.Fatalf("entry %d first seen at %d, cut-off just before: named %v, expired %v", i, first(i), got, expired)
		}
	}
	// The earlier of the shared fingerprint's entries (10,000) is in over:
	// its block's latest (entry 10,001's time, half an hour later) bounds it.
	if got, _ := s.numbered(shared, first(10_000)+unit, nil); !slices.Equal(got, []uint32{10_001, 10_000}) {
		t.Fatalf("shared fingerprint, cut-off a unit past the earlier entry: named %v, want [10001 10000]", got)
	}
}

// A slot holds numbers below numMask. Numbers count entries, not
// fingerprints (a value in several key groups takes one in each), so a
// bucket may reach numMask with fewer than indexCap fingerprints: its next
// entries are written by value. State of an earlier version may hold
// numbers of 32 bits: a load keeps those apart, and a lookup of their
// fingerprint always names them (latest first, before the slot's).
func TestBucketIndexKeepsNumbersPastASlotApart(t *testing.T) {
	s := newBucketIndex(0, 3_600_000, 0)
	const a, b, c = 1 << 32, 2 << 32, 3 << 32
	s.put(a>>32, numMask-1, 10) // the last number a slot holds
	if got, expired := s.numbered(a, -1, nil); expired || !slices.Equal(got, []uint32{numMask - 1}) {
		t.Fatalf("entry %d: named %v (expired %v)", numMask-1, got, expired)
	}
	if _, numbered := s.add(b, 20); numbered {
		t.Fatal("an entry numbered past the last number a slot holds")
	}
	if !s.mayHoldByValue(b) {
		t.Fatal("the entry written by value is not in the filter")
	}

	loaded := newBucketIndex(0, 3_600_000, 0)
	for _, e := range []struct {
		fp    uint64
		n     uint32
		first int64
	}{{b >> 32, numMask + 9, 30}, {b >> 32, 3, 10}, {c >> 32, 1 << 30, 10}, {b >> 32, numMask, 20}} {
		loaded.put(e.fp, e.n, e.first)
	}
	loaded.seal()
	if got, expired := loaded.numbered(b, 1000, nil); expired || !slices.Equal(got, []uint32{numMask + 9, numMask}) {
		t.Errorf("fingerprint b past its slot entry's time: named %v (expired %v), want [%d %d]", got, expired, numMask+9, numMask)
	}
	if got, _ := loaded.numbered(b, 5, nil); !slices.Equal(got, []uint32{numMask + 9, numMask, 3}) {
		t.Errorf("fingerprint b before every time: named %v", got)
	}
	if got, expired := loaded.numbered(c, 1000, nil); expired || !slices.Equal(got, []uint32{1 << 30}) {
		t.Errorf("fingerprint c, only past a slot's numbers: named %v (expired %v)", got, expired)
	}
	if _, numbered := loaded.add(1<<32, 40); numbered || loaded.next != 1<<30+1 {
		t.Errorf("after a load past numMask: numbered %v, next %d", numbered, loaded.next)
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
	var full, againInOld, grows, quarter int
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
		// Each time the move passes a quarter, a half and three
		// quarters of old.
		q := 0
		if s.old != nil {
			q = s.moved * 4 / len(s.old)
		}
		if q != quarter && q > 0 {
			full++
			for _, fp := range seen {
				check(fp)
			}
		}
		quarter = q
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

// A bucket's tables (and its filter) are off the Go heap (internal/offheap)
// and go back to the system as the bucket expires, as does the table a
// growth replaced once its values moved: at once, not after a collection
// (mappedNow).
func TestExpiredBucketsReturnTheirTables(t *testing.T) {
	defer func(n int) { indexCap = n }(indexCap)
	indexCap = 40_000 // the last values of a bucket go by value, behind a filter
	// Earlier tests' indexes are garbage: once collected, nothing is mapped.
	const base = 0
	waitMapped(t, base)
	x := &index{seed: maphash.MakeSeed(), ttl: 1000}
	x.reset()
	for b := range int64(3) {
		s := x.open(b)
		for i := range uint64(50_000) {
			s.add(maphash.Comparable(x.seed, i), b*1000)
		}
	}
	// Each bucket: its table of the 53,334 slots indexCap values fill 3/4
	// of (bucket 0's grown by half from 1,024 slots, the ones it replaced
	// moved and unmapped; the next ones made at that size for the values
	// of the buckets before them), and a filter of 200K values.
	perBucket := int64(53_334)*8 + int64(2+8*(bloomFactor*40_000*10/512))*8
	for b := range int64(3) {
		if got := len(x.sets[b].slots); got != 53_334 {
			t.Fatalf("bucket %d's table has %d slots, want 53,334", b, got)
		}
	}
	mappedNow(t, base+3*perBucket)
	x.expire(2)
	mappedNow(t, base+perBucket)
	// The bucket kept has its tables: every value is still found.
	kept := x.sets[2]
	for i := range uint64(40_000) {
		h := maphash.Comparable(x.seed, i)
		if kept.find(h>>32) == 0 {
			t.Fatalf("value %d of the kept bucket is not in its table", i)
		}
	}
	x.reset()
	mappedNow(t, base)
	runtime.KeepAlive(x)
}

// A new bucket's table is made for as many values as the larger of the
// two buckets before it holds (the bucket before an eighth more when it is
// the only one), so that a bucket of a steady stream never grows (no
// moves, no old table beside the new one); a bucket with neither of those
// (the first, one far behind or ahead) starts at minSlots.
func TestABucketsTableIsMadeForTheBucketsBeforeIt(t *testing.T) {
	x := &index{seed: maphash.MakeSeed(), ttl: 1000}
	x.reset()
	fill := func(b int64, from, n uint64) *bucketIndex {
		s := x.open(b)
		for i := from; i < from+n; i++ {
			s.add(maphash.Comparable(x.seed, i), b*1000)
		}
		return s
	}
	// A table holds distinct fingerprints: two of bucket 0's 30,000 values
	// share one about once in ten seeds, so the count to size for is b0.n.
	b0 := fill(0, 0, 30_000)
	if b0.n < 29_990 {
		t.Fatalf("bucket 0 holds %d fingerprints of its 30,000 values", b0.n)
	}
	if got := len(b0.slots); got == tableFor(b0.n) {
		t.Fatalf("the first bucket's table has %d slots, as if made for its values", got)
	}
	// Bucket 1 has no bucket two before it: bucket 0's count and an
	// eighth (records behind in time still to come to bucket 0).
	if got, want := len(fill(1, 30_000, 24_000).slots), tableFor(b0.n+b0.n/8); got != want {
		t.Fatalf("bucket 1's table has %d slots, want %d (made for bucket 0's %d values and an eighth)", got, want, b0.n)
	}
	// Bucket 1 holds fewer values than bucket 0; bucket 2's table is made
	// for bucket 0's 30,000, and 10% more than that fit it.
	s := fill(2, 54_000, 33_000)
	if got, want := len(s.slots), tableFor(b0.n); got != want || s.old != nil {
		t.Fatalf("bucket 2's table has %d slots (growing: %v), want %d made for the %d values of bucket 0, two before it", got, s.old != nil, want, b0.n)
	}
	for i := uint64(54_000); i < 87_000; i++ {
		if s.find(maphash.Comparable(x.seed, i)>>32) == 0 {
			t.Fatalf("value %d of bucket 2 is not in its table", i)
		}
	}
	for _, b := range []int64{-5, 9} {
		if got := len(x.open(b).slots); got != minSlots {
			t.Errorf("bucket %d, with no bucket just before it, has a table of %d slots, want %d", b, got, minSlots)
		}
	}
	if got := tableFor(2 * indexCap); got != fullTable() {
		t.Errorf("a table made for twice indexCap values has %d slots, want the largest, %d", got, fullTable())
	}
	x.reset()
}

// A bucket whose values start part of the way into its width (a job's
// first bucket starts at its first record) counts, for the table of the
// bucket after it, as many as it would hold over its whole width, at most
// twice what it holds: the table made for it then holds as many without
// growing.
func TestABucketThatStartsPartWayCountsForItsWholeWidth(t *testing.T) {
	x := &index{seed: maphash.MakeSeed(), ttl: 1000}
	x.reset()
	defer x.reset()
	fill := func(b int64, from, n uint64, firstFrom, firstTo int64) *bucketIndex {
		s := x.open(b)
		for i := range n {
			s.add(maphash.Comparable(x.seed, from+i), b*1000+firstFrom+int64(i)*(firstTo-firstFrom)/int64(n))
		}
		return s
	}
	// The last 60% of bucket 0's width: its 20,000 values count 33,333,
	// and an eighth more as no bucket is two before bucket 1.
	b0 := fill(0, 0, 20_000, 400, 1000)
	full := int(float64(b0.n) * 1000 / 600)
	s := fill(1, 20_000, uint64(full), 0, 1000)
	if got, want := len(s.slots), tableFor(full+full/8); got != want || s.old != nil {
		t.Fatalf("bucket 1's table has %d slots (growing: %v), want %d made for the %d values bucket 0 holds over its whole width", got, s.old != nil, want, full)
	}
	// Bucket 1 covers its width: it counts what it holds.
	if got, want := s.fullCount(x.ttl), s.n; got != want {
		t.Errorf("a bucket whose values span its width counts %d, want the %d it holds", got, want)
	}
	// A tenth of its width: at most twice what it holds.
	b10 := fill(10, 100_000, 1_000, 900, 1000)
	if got, want := b10.fullCount(x.ttl), 2*b10.n; got != want {
		t.Errorf("a bucket whose values come in its last tenth counts %d, want twice its %d", got, b10.n)
	}
}

// mappedNow checks that want bytes of tables are mapped, with no
// collection in between to unmap what became unreachable.
func mappedNow(t *testing.T, want int64) {
	t.Helper()
	if got := offheap.Mapped(); got != want {
		t.Fatalf("%d bytes mapped, want %d", got, want)
	}
}

// waitMapped collects garbage until internal/offheap has want bytes mapped
// (cleanups run on their own goroutine after a collection), for 10 s at
// most.
func waitMapped(t *testing.T, want int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); offheap.Mapped() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes mapped, want %d", offheap.Mapped(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// add numbers a new entry of a value of hash h, first seen at first, one
// number at a time (as the version before runs did), and returns it;
// numbered is false when the table is full and the entry is to be written
// by value instead (then it is put in the filter).
func (s *bucketIndex) add(h uint64, first int64) (n uint32, numbered bool) {
	if s.n >= indexCap || s.next >= numMask {
		s.putByValue(h>>32, bloomFactor*indexCap)
		return 0, false
	}
	n = s.next
	s.put(h>>32, n, first)
	return n, true
}

// A table of any size (grow: half as large again, not a power of two)
// finds every value's latest entry, at its end where probes wrap to its
// start, and while it grows and its values move a few at each put; also
// across the growth that stops at the table indexCap values fill 3/4 of
// (an odd size).
func TestATableOfAnySizeFindsEveryValueWhileItGrows(t *testing.T) {
	for _, c := range []struct {
		cap, values, size int
	}{
		// 1,024 slots, 1,536 at 769 values, 2,304 at 1,153 and 3,456
		// at 1,729.
		{cap: 1 << 20, values: 2_000, size: 3_456},
		// 1,024 slots, then 1,334 (not 1,536): 1,000 values fill 3/4.
		{cap: 1_000, values: 1_000, size: 1_334},
	} {
		t.Run(fmt.Sprintf("indexCap=%d", c.cap), func(t *testing.T) {
			defer func(n int) { indexCap = n }(indexCap)
			indexCap = c.cap
			s := newBucketIndex(0, 3_600_000, 0)
			// Fingerprints near 2^32 have homes at the table's end: their
			// probes wrap around to its start.
			// Distinct fingerprints, a quarter near 2^32, the rest at random.
			rng := rand.New(rand.NewPCG(5, 6))
			fps := make([]uint64, 0, c.values+1_000)
			taken := map[uint64]bool{}
			for i := 0; len(fps) < cap(fps); i++ {
				f := rng.Uint64() >> 32
				if i%4 == 0 {
					f = 1<<32 - 1 - uint64(i)
				}
				if !taken[f] {
					taken[f] = true
					fps = append(fps, f)
				}
			}
			fp := func(i int) uint64 { return fps[i] }
			var grew bool
			for i := range c.values {
				if n, numbered := s.add(fp(i)<<32, int64(i)); !numbered || n != uint32(i) {
					t.Fatalf("value %d numbered %d (%v)", i, n, numbered)
				}
				grew = grew || s.old != nil
				// Every value so far, wherever it is now (new table or old).
				if i%97 == 0 || s.old != nil && i%7 == 0 {
					for j := 0; j <= i; j++ {
						if v := s.find(fp(j)); v == 0 || slotNumber(v) != uint32(j) {
							t.Fatalf("after %d values (table %d slots, old %d, %d moved): value %d found as %x", i+1, len(s.slots), len(s.old), s.moved, j, v)
						}
					}
				}
			}
			if !grew || len(s.slots) != c.size {
				t.Fatalf("%d values: a table of %d slots (grew: %v), want %d", c.values, len(s.slots), grew, c.size)
			}
			for i := c.values; i < len(fps); i++ {
				if v := s.find(fp(i)); v != 0 {
					t.Fatalf("fingerprint %x, never added, was found: %x", fp(i), v)
				}
			}
		})
	}
}

// An earlier generation's tables and filter go back to the system as it is
// dropped, at once.
func TestADroppedGenerationReturnsItsTablesAndFilter(t *testing.T) {
	const base = 0
	waitMapped(t, base) // earlier tests' indexes are garbage
	g := newOldGeneration(maphash.MakeSeed(), keySpan{}, 1000)
	s := g.open(0)
	for i := range uint64(60_000) { // a filter of 75 KB: mapped
		h := maphash.Comparable(g.seed, i)
		s.add(h, 0)
		g.loaded(0, uint32(h>>32))
	}
	g.seal()
	if offheap.Mapped() == base || g.filterMem == nil || len(g.filterMem.W)*8 < 64<<10 {
		t.Fatalf("%d bytes mapped for a generation of 60,000 values, filter %v: want its table and filter mapped", offheap.Mapped(), g.filterMem != nil)
	}
	g.free()
	mappedNow(t, base)
	runtime.KeepAlive(g)
}
