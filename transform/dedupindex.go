package transform

import (
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/connector-dev/connector/internal/offheap"
)

// indexCap is the most values a bucket's table holds: a table of 4M slots
// (32 MB), 3/4 full, the fill at which it would grow. Past it, the
// bucket's new values are written by value, and a Bloom filter of their
// fingerprints, sized for bloomFactor times as many (10 bits a value: 20
// MB), says which of them a lookup must read; past that too, every lookup
// in the bucket reads the KV by value. (At 2M values, half that table,
// bench/'s dedup over 0->10M keys spent 2.5% more CPU, in its filter's
// false positives.)
var indexCap = 3 << 20 // a variable for tests

const bloomFactor = 5

// blockShift: a bucket keeps, for each block of 1<<blockShift entry
// numbers, the latest first sighting of the block's entries
// (bucketIndex.latest).
const blockShift = 6

// index is a Dedup's in-memory knowledge of its buckets (dedup.go). It is
// built at the Dedup's first record from what the KV holds (the Dedup's
// load) and kept up to date by every write after that.
type index struct {
	seed maphash.Seed // the process's: the index is built at every start
	ttl  int64        // a bucket's width, ms
	sets map[int64]*bucketIndex
	top  int64 // the newest bucket in sets (math.MinInt64: none)
}

// newIndex is an empty index of buckets of width ttl.
func newIndex(seed maphash.Seed, ttl int64) index {
	return index{seed: seed, ttl: ttl, top: math.MinInt64}
}

// reset empties the index; the caller adds what the KV holds.
func (x *index) reset() {
	for b := range x.sets {
		x.drop(b)
	}
	x.sets = make(map[int64]*bucketIndex)
	x.top = math.MinInt64
}

// drop forgets bucket b and gives its tables back at once.
func (x *index) drop(b int64) {
	if s := x.sets[b]; s != nil {
		s.free()
		delete(x.sets, b)
		if b == x.top {
			x.top = math.MinInt64
			for c := range x.sets {
				x.top = max(x.top, c)
			}
		}
	}
}

// open returns bucket b's index, made empty if the bucket had none. A new
// bucket's table is sized for as many values as the buckets before it
// hold (expected): buckets of a steady stream hold about as many, and a
// table grown from minSlots to that size by halves (grow) had moved each
// value twice on average and mapped three times its final size on the way
// (bench/RESULTS.md, "2026-12-06, 22:55").
func (x *index) open(b int64) *bucketIndex {
	s := x.sets[b]
	if s == nil {
		s = newBucketIndex(b*x.ttl, x.ttl, x.expected(b))
		x.sets[b] = s
		x.top = max(x.top, b)
	}
	return s
}

// expected is how many values a table made for bucket b is to hold: the
// larger of what the two buckets before it hold over their widths
// (fullCount). Not the bucket before alone: when b opens, records of
// partitions behind in time are still filling it (bench/'s buckets: 8%
// short of their final count), and a table that then grows holds its old
// table too for a while. When there is no bucket two before (a job's
// second bucket), the bucket before counts an eighth more for them.
func (x *index) expected(b int64) int {
	n := 0
	before := x.sets[b-2]
	if before != nil {
		n = before.fullCount(x.ttl)
	}
	if prev := x.sets[b-1]; prev != nil {
		p := prev.fullCount(x.ttl)
		if before == nil {
			p += p / 8
		}
		n = max(n, p)
	}
	return n
}

// fullCount is how many values the bucket would hold had its values come
// over its whole width at the rate they came from the earliest on, at most
// twice what it holds. A job's first bucket starts at its first record,
// part of the way into its width (a third in bench/'s dedup, 292k values
// a worker where the next held 450k): the table of the bucket after it,
// made for its count, grew once or twice, to 6.9 MB a worker where 5.4
// did (bench/RESULTS.md, "2026-12-07, 02:00").
func (s *bucketIndex) fullCount(width int64) int {
	covered := s.start + width - s.earliest
	if s.earliest < s.start || covered <= 0 || covered >= width {
		return s.n
	}
	return int(min(float64(s.n)*float64(width)/float64(covered), 2*float64(s.n)))
}

// expire forgets the buckets below keep, which the KV no longer holds.
func (x *index) expire(keep int64) {
	for b := range x.sets {
		if b < keep {
			x.drop(b)
		}
	}
}

// bucketIndex is one bucket's index. A bucket's values are numbered
// entries (n = 0, 1, 2, ... in the order the Dedup wrote them, the number
// in the KV key) until the table holds indexCap values; then by-value
// entries (the value in the KV key).
//
// For numbered entries, an open-addressing table of 8-byte slots maps a
// 32-bit fingerprint of the value's hash (its high half) to the latest
// entry of that fingerprint: its number and its first sighting, coarsely
// (slot, below; 0: an empty slot); the numbers of its earlier entries, if
// any (another value sharing the fingerprint, or the same value in another
// key group), are in over. Each entry's first sighting has an upper bound:
// for an entry in a slot, the end of the 1/1023 of the bucket's width its
// first sighting is in; for every entry, latest holds, per block of
// numbers, the latest first sighting of the block's entries (a block's
// entries were written one after the other, mostly from one partition's
// fetch: their times are close, but partitions skewed in time share a
// block, and a bound of a block's latest sent 3% of the lookups of
// bench/profile --dedup u to the KV for values last seen just over a TTL
// ago). A lookup reads the KV for the entries of the value's fingerprint
// whose bound is within the TTL and compares the values: the index may send
// a lookup to the KV needlessly, never skip one it needs. 11 to 16 bytes a
// value (the table is 1/2 to 3/4 full), against about 40 in a Go map.
type bucketIndex struct {
	id uint64 // this process's only (bucketIDs): the run cache's name for it
	// start and unit place a slot's time: an entry first seen at start +
	// q*unit up to start + (q+1)*unit - 1 (q < qUnknown) has q in its
	// slot. unit 0: no times in slots (every q is qUnknown).
	start, unit int64
	slots       []uint64
	// The tables' memory (internal/offheap: off the Go heap), kept and
	// dropped with slots, old and bloom.
	slotsMem, oldMem, bloomMem *offheap.Words
	// old is the table slots replaced when it grew, while its values move
	// into slots a few at a time (moveStep for each put): a value is in
	// one of the two, in old if at an index of moved or above. A table of
	// a million values moved all at once held up the bucket's put, and the
	// records behind it (and the next checkpoint's barrier), 10-40 ms.
	old   []uint64
	moved int
	n     int // fingerprints in slots and old
	// earliest is the earliest first sighting put (math.MaxInt64: none
	// yet): where in its width the bucket's values start (fullCount).
	earliest int64
	next     uint32 // the number of the next entry
	latest   []int64
	over     map[uint32][]uint32
	// big holds, by fingerprint, entries whose numbers do not fit a slot
	// (numMask and above), latest last; their first sightings are not
	// bounded. Only a load meets them, in state of an earlier version
	// (numbers of 32 bits): add writes by value once next reaches numMask.
	big map[uint32][]uint32
	// touched is the Dedup's record count when a lookup or a write last
	// came to the bucket (Dedup.expireStale).
	touched uint64
	// runs are the runs of numbered entries being filled, by key group
	// (dedupruns.go); numberedKeys says the bucket holds entries numbered
	// one per KV entry, of the version before runs.
	runs         map[uint16]*openRun
	openBytes    int               // the bytes of runs' values
	closed       map[uint16]uint32 // runs closed not full, by key group: their first number
	numberedKeys bool

	// By-value entries: written past indexCap, or by earlier versions.
	byValue bool
	bloom   bloom    // their fingerprints; nil with byValue: unknown
	loaded  []uint32 // their fingerprints while the Dedup loads (seal)
}

// A slot is fingerprint<<32 | q<<qShift | number+1: q is the slot's entry's
// first sighting in units of the bucket's width/1023 (qUnknown: not known,
// when it is outside the bucket), the number below numMask. Numbers count
// entries, not fingerprints: the same value in several key groups (records
// not keyed by the dedup's field) takes a number in each, so a bucket's
// numbers may pass indexCap; past numMask it writes by value.
const (
	qShift   = 22
	qUnknown = 1<<(32-qShift) - 1
	numMask  = 1<<qShift - 1
)

// bucketIDs numbers the bucket indexes a process makes.
var bucketIDs atomic.Uint64

// newBucketIndex is an empty index of the bucket of width ms beginning at
// start (Unix ms), its table sized for expect values (tableFor).
func newBucketIndex(start, width int64, expect int) *bucketIndex {
	s := &bucketIndex{id: bucketIDs.Add(1), start: start, unit: (width + qUnknown - 1) / qUnknown, earliest: math.MaxInt64}
	if size := tableFor(expect); size > minSlots {
		s.slotsMem = offheap.NewResident(size) // expect values will touch every page
	} else {
		s.slotsMem = offheap.New(minSlots)
	}
	s.slots = s.slotsMem.W
	return s
}

// tableFor is the size of a table made for n values: they fill 2/3 of it
// (it grows at 3/4: an eighth more fit), at least minSlots, at most the
// table indexCap values fill 3/4 of (grow).
func tableFor(n int) int {
	return max(minSlots, min(n+n/2, fullTable()))
}

// fullTable is the largest table: indexCap values fill 3/4 of it.
func fullTable() int { return (indexCap*4 + 2) / 3 }

// free gives the bucket's tables back at once (internal/offheap's Free),
// rather than after a collection finds the bucket unreachable: an expired
// bucket's tables (5 MB a worker in bench/'s dedup over 1M keys, a new
// bucket every 1.4 s) stayed mapped until then, beside the tables of the
// bucket after it. The index no longer reads the bucket: every read of its
// tables is on the Dedup's goroutine, through the index.
func (s *bucketIndex) free() {
	s.slotsMem.Free()
	s.oldMem.Free()
	s.bloomMem.Free()
	s.slots, s.old, s.bloom = nil, nil, nil
	s.slotsMem, s.oldMem, s.bloomMem = nil, nil, nil
}

// minSlots is the size of a new table.
const minSlots = 1024

// home is where fingerprint fp's probe begins in a table of size slots:
// fp (32 bits) scaled to [0, size). Tables need not be powers of two
// (grow).
func home(fp uint64, size int) int { return int(fp * uint64(size) >> 32) }

// slot is the slot of entry n of fingerprint fp, first seen at first.
func (s *bucketIndex) slot(fp uint64, n uint32, first int64) uint64 {
	q := uint64(qUnknown)
	if off := first - s.start; s.unit > 0 && off >= 0 && off < qUnknown*s.unit {
		q = uint64(off / s.unit)
	}
	return fp<<32 | q<<qShift | uint64(n) + 1
}

// slotNumber is the number of a slot's entry.
func slotNumber(v uint64) uint32 { return uint32(v&numMask) - 1 }

// slotBound is an upper bound of a slot's entry's first sighting.
func (s *bucketIndex) slotBound(v uint64) int64 {
	n := slotNumber(v)
	b := s.bound(n)
	if q := int64(v>>qShift) & qUnknown; q != qUnknown {
		b = min(b, s.start+(q+1)*s.unit-1)
	}
	return b
}

// reserve gives the next block of runLen numbers, for a run; false when
// the table is full or no block is left below numMask (the entries are to
// be written by value).
func (s *bucketIndex) reserve() (n0 uint32, ok bool) {
	n0 = (s.next + runLen - 1) &^ (runLen - 1)
	if s.n >= indexCap || n0+runLen > numMask {
		return 0, false
	}
	s.next = n0 + runLen
	return n0, true
}

// put records the numbered entry n of fingerprint fp, first seen at first.
// Numbers may come in any order (a load); next ends past the largest.
func (s *bucketIndex) put(fp uint64, n uint32, first int64) {
	s.next = max(s.next, n+1)
	s.earliest = min(s.earliest, first)
	if n >= numMask {
		if s.big == nil {
			s.big = make(map[uint32][]uint32)
		}
		s.big[uint32(fp)] = append(s.big[uint32(fp)], n)
		return
	}
	blk := int(n >> blockShift)
	for len(s.latest) <= blk {
		s.latest = append(s.latest, -1<<63)
	}
	s.latest[blk] = max(s.latest[blk], first)
	if s.old != nil {
		s.move(moveStep)
	}
	i := home(fp, len(s.slots))
	for ; s.slots[i] != 0; i = s.nextSlot(i) {
		if s.slots[i]>>32 == fp {
			s.again(&s.slots[i], fp, n, first)
			return
		}
	}
	if s.old != nil {
		if j, ok := s.inOld(fp); ok {
			s.again(&s.old[j], fp, n, first)
			return
		}
	}
	s.slots[i] = s.slot(fp, n, first)
	if s.n++; s.n*4 > len(s.slots)*3 {
		s.grow()
	}
}

// again records entry n of fingerprint fp, first seen at first, which
// slot already holds: the slot keeps the latest entry, over the earlier
// ones.
func (s *bucketIndex) again(slot *uint64, fp uint64, n uint32, first int64) {
	had := slotNumber(*slot)
	if n == had {
		// The same number again: a value of two key groups, or two
		// workers' entries in state merged by a rescale. The slot's time
		// must bound both: the later one's.
		if v := s.slot(fp, n, first); v>>qShift&qUnknown > *slot>>qShift&qUnknown {
			*slot = v
		}
		return
	}
	if n > had {
		*slot = s.slot(fp, n, first)
		had, n = n, had
	}
	if s.over == nil {
		s.over = make(map[uint32][]uint32)
	}
	s.over[uint32(fp)] = append(s.over[uint32(fp)], n)
}

// find returns fp's slot value, 0 if the bucket has no entry of fp. The
// table first: once moved, a value is only there, and most are.
func (s *bucketIndex) find(fp uint64) uint64 {
	for i := home(fp, len(s.slots)); s.slots[i] != 0; i = s.nextSlot(i) {
		if s.slots[i]>>32 == fp {
			return s.slots[i]
		}
	}
	if s.old != nil {
		if i, ok := s.inOld(fp); ok {
			return s.old[i]
		}
	}
	return 0
}

// inOld returns the index of fp's slot in old if fp is there and has not
// moved. old is never changed but for a slot's entry number (again), so
// its probe sequences stay whole; a slot below moved is in slots now.
func (s *bucketIndex) inOld(fp uint64) (int, bool) {
	for i := home(fp, len(s.old)); ; i = wrap(i+1, len(s.old)) {
		switch v := s.old[i]; {
		case v == 0:
			return 0, false
		case v>>32 == fp:
			return i, i >= s.moved
		}
	}
}

// nextSlot is the slot after i in slots' probe order.
func (s *bucketIndex) nextSlot(i int) int { return wrap(i+1, len(s.slots)) }

// wrap is i in a table of size slots: 0 past its end.
func wrap(i, size int) int {
	if i == size {
		return 0
	}
	return i
}

// bound is an upper bound of entry n's first sighting.
func (s *bucketIndex) bound(n uint32) int64 { return s.latest[n>>blockShift] }

// numbered appends to dst the numbers of the entries of h's fingerprint
// whose first sighting may be after cutoff, latest first. expired says
// that the fingerprint has entries and none of them can be after cutoff:
// the value's numbered entries in this bucket were all first seen at cutoff
// or before, and so were its entries in older buckets.
func (s *bucketIndex) numbered(h uint64, cutoff int64, dst []uint32) (_ []uint32, expired bool) {
	fp := h >> 32
	had := len(dst)
	if s.big != nil {
		big := s.big[uint32(fp)]
		for j := len(big) - 1; j >= 0; j-- {
			dst = append(dst, big[j]) // not bounded: always read
		}
	}
	v := s.find(fp)
	if v == 0 {
		return dst, false
	}
	if s.slotBound(v) > cutoff {
		dst = append(dst, slotNumber(v))
	}
	older := s.over[uint32(fp)]
	for j := len(older) - 1; j >= 0; j-- {
		if s.bound(older[j]) > cutoff {
			dst = append(dst, older[j])
		}
	}
	return dst, len(dst) == had
}

// mayHoldByValue says whether the bucket may hold a by-value entry of a
// value of hash h.
func (s *bucketIndex) mayHoldByValue(h uint64) bool {
	ok := s.byValue && (s.bloom == nil || s.bloom.has(h>>32))
	runtime.KeepAlive(s) // s.bloomMem: the filter's memory (internal/offheap)
	return ok
}

// putByValue records a by-value entry of fingerprint fp, in a filter made
// for capacity fingerprints if the bucket has none yet.
func (s *bucketIndex) putByValue(fp uint64, capacity int) {
	if !s.byValue {
		s.bloomMem = newBloom(capacity)
		s.byValue, s.bloom = true, bloom(s.bloomMem.W)
	}
	if s.bloom != nil && !s.bloom.add(fp) {
		s.bloomMem.Free()
		s.bloom, s.bloomMem = nil, nil // too many values for it to tell: unknown
	}
	runtime.KeepAlive(s) // s.bloomMem while add ran
}

// seal ends a load: the by-value fingerprints go into a filter sized for
// twice as many (and at least for what may be added past indexCap).
func (s *bucketIndex) seal() {
	if s.loaded != nil {
		capacity := 2 * len(s.loaded)
		if s.n >= indexCap {
			capacity = max(capacity, bloomFactor*indexCap)
		}
		for _, fp := range s.loaded {
			s.putByValue(uint64(fp), capacity)
		}
		s.loaded = nil
	}
	for _, m := range []map[uint32][]uint32{s.over, s.big} {
		for _, nums := range m {
			slices.Sort(nums) // latest last, as numbered reads them
		}
	}
}

// moveStep is how many of old's slots each put moves. A table grows at
// 3/4 full, so its values fill 1/2 of the new one, which grows again after
// 1/4 of its size more puts: old (2/3 of its size) has long moved by then.
// While values move, a lookup of a value not in the new table probes the
// old one too (a second cache miss): with 8 a put, that cost
// BenchmarkDedupIndexOverAMillionKeys 8%; with 32 the moves end four times
// sooner and the cost is lost in the noise.
const moveStep = 32

// grow makes the table half as large again: the values move from old a
// few at each put (move). A slot's position is given by its fingerprint
// (home), which the slot keeps, so a move needs no hash. Tables that
// doubled were 3/8 to 3/4 full: bench/'s dedup over 1M keys ended each
// bucket of 450k values (a worker's) in a table of 1M slots, 43% full,
// and held up to 60 MiB of tables. Grown by half they are 1/2 to 3/4
// full (672k slots there, 67%), and old is smaller beside the new table.
func (s *bucketIndex) grow() {
	if s.old != nil {
		// Not reached (see moveStep) but after a growth stopped at the
		// table indexCap values fill 3/4 of, just past one already
		// nearly that full, in a load of more values than indexCap:
		// never two olds.
		s.move(len(s.old))
	}
	size := len(s.slots) + len(s.slots)/2
	// The last growth before indexCap values: to the table they fill 3/4
	// of (4M slots), not past it (5.1M).
	if full := fullTable(); full > len(s.slots) && size > full {
		size = full
	}
	s.old, s.oldMem, s.moved = s.slots, s.slotsMem, 0
	s.slotsMem = offheap.NewResident(size) // the move writes half its slots, in every page
	s.slots = s.slotsMem.W
}

// move moves up to k more of old's slots into slots.
func (s *bucketIndex) move(k int) {
	for end := min(len(s.old), s.moved+k); s.moved < end; s.moved++ {
		v := s.old[s.moved]
		if v == 0 {
			continue
		}
		for i := home(v>>32, len(s.slots)); ; i = s.nextSlot(i) {
			if s.slots[i] == 0 {
				s.slots[i] = v
				break
			}
		}
	}
	if s.moved == len(s.old) {
		s.oldMem.Free()
		s.old, s.oldMem, s.moved = nil, nil, 0
	}
}

// bloom is a blocked Bloom filter of 32-bit fingerprints: each sets 6 bits
// of one 512-bit block (one cache line), 10 bits a value, about 1% false
// positives at capacity. It never says a fingerprint it was given is
// absent. Its first word counts the fingerprints added and the capacity.
type bloom []uint64

// newBloom returns the words of a filter for capacity fingerprints.
func newBloom(capacity int) *offheap.Words {
	blocks := max(8, capacity*10/512) // small ones (in tests) far from full
	b := offheap.New(2 + 8*blocks)
	b.W[1] = uint64(capacity)
	return b
}

// add adds fp, and says false once more were added than the filter holds.
func (b bloom) add(fp uint64) bool {
	blk, bits := b.spread(fp)
	for j := range 6 {
		bit := bits >> (9 * j) & 511
		blk[bit>>6] |= 1 << (bit & 63)
	}
	b[0]++
	return b[0] <= b[1]
}

// has says whether fp may have been added.
func (b bloom) has(fp uint64) bool {
	blk, bits := b.spread(fp)
	for j := range 6 {
		bit := bits >> (9 * j) & 511
		if blk[bit>>6]&(1<<(bit&63)) == 0 {
			return false
		}
	}
	return true
}

// spread mixes fp (splitmix64's finalizer) into the block it goes to and
// the 54 bits that choose its 6 bits there.
func (b bloom) spread(fp uint64) (block []uint64, bits uint64) {
	z := fp + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	n := uint64(len(b)-2) / 8
	i := 2 + 8*((z>>32)%n)
	// The block comes from the high half; the bits from a second mix, so
	// that they do not depend on the block.
	w := z*0xff51afd7ed558ccd ^ z>>29
	return b[i : i+8], w
}
