package transform

import (
	"hash/maphash"
	"math"
)

// indexCap is the most values a bucket's index holds (a table of 32 MB
// at the most); beyond it the table gives way to a Bloom filter of the
// values' fingerprints, sized for bloomFactor times as many (10 bits a
// value: 20 MB), which still answers "absent" for most new values; past
// that too, every lookup in the bucket reads the KV.
var indexCap = 1 << 21 // a variable for tests

const bloomFactor = 8

// index is a Dedup's in-memory knowledge of its buckets (dedup.go): for
// each, the hashes of its values with the latest first sighting of the
// values of each hash. Once built (reset, at the Dedup's first record,
// then what the KV holds added) it knows every bucket; before, none.
type index struct {
	seed  maphash.Seed           // the process's: the index is built at every start
	width int64                  // a bucket's width, ms (the TTL)
	sets  map[int64]*bucketIndex // nil before reset: every bucket unknown
}

// What index.lookup knows of a value in a bucket.
const (
	absent  = iota // no value of its hash there
	expired        // only values of its hash first seen before the cut-off
	unknown        // read the KV
)

// reset starts an empty index that knows every bucket: the caller adds
// what the KV holds.
func (x *index) reset() {
	x.sets = make(map[int64]*bucketIndex)
}

// lookup says what bucket b may hold of a value of hash h, for a lookup
// whose windows must have begun after cutoff (ms).
func (x *index) lookup(b int64, h uint64, cutoff int64) int {
	if x.sets == nil {
		return unknown
	}
	s := x.sets[b]
	switch {
	case s == nil:
		return absent
	case s.full:
		if s.bloom != nil && !s.bloom.has(h>>32) {
			return absent
		}
		return unknown
	}
	latest, ok := s.get(h)
	switch {
	case !ok:
		return absent
	case latest <= cutoff:
		return expired
	}
	return unknown
}

// add records that bucket b holds a value of hash h first seen at first.
func (x *index) add(b int64, h uint64, first int64) {
	if x.sets == nil {
		return
	}
	s := x.sets[b]
	if s == nil {
		s = newBucketIndex(b, x.width)
		x.sets[b] = s
	}
	s.put(h, first)
}

// expire forgets the buckets below keep, which the KV no longer holds.
func (x *index) expire(keep int64) {
	for b := range x.sets {
		if b < keep {
			delete(x.sets, b)
		}
	}
}

// bucketIndex is one bucket's index: an open-addressing table of 8-byte
// slots, a 32-bit fingerprint of the value's hash (its high half) and the
// latest first sighting of the values of that fingerprint, as units of res
// ms after the bucket's start, rounded up, plus one (0: an empty slot).
// Rounding up and merging values that share a fingerprint only ever make a
// sighting look later, and a lookup that finds one within the TTL reads
// the KV: the index may send a lookup to the KV needlessly, never skip one
// it needs. 11 to 21 bytes a value (the table is 3/8 to 3/4 full), against
// about 40 in a Go map.
type bucketIndex struct {
	start, res int64
	slots      []uint64
	n          int
	full       bool  // past indexCap values: the table is dropped
	bloom      bloom // once full: the fingerprints of every value put; nil past its capacity
}

func newBucketIndex(b, width int64) *bucketIndex {
	return &bucketIndex{start: b * width, res: max(1, width>>32+1), slots: make([]uint64, 1024)}
}

// get returns the latest first sighting (rounded up) of hash h's
// fingerprint.
func (s *bucketIndex) get(h uint64) (latest int64, ok bool) {
	fp, mask := h>>32, uint64(len(s.slots)-1)
	for i := fp & mask; ; i = (i + 1) & mask {
		switch v := s.slots[i]; {
		case v == 0:
			return 0, false
		case v>>32 == fp:
			return s.start + (int64(v&math.MaxUint32)-1)*s.res, true
		}
	}
}

// put records a value of hash h first seen at first, keeping the latest
// sighting of its fingerprint.
func (s *bucketIndex) put(h uint64, first int64) {
	if s.full {
		if s.bloom != nil && !s.bloom.add(h>>32) {
			s.bloom = nil // too many values for it to tell: unknown
		}
		return
	}
	units := uint64(min(max((first-s.start+s.res-1)/s.res, 0), math.MaxUint32-1)) + 1
	fp, mask := h>>32, uint64(len(s.slots)-1)
	for i := fp & mask; ; i = (i + 1) & mask {
		switch v := s.slots[i]; {
		case v == 0:
			if s.n >= indexCap {
				s.toBloom()
				s.bloom.add(fp)
				return
			}
			s.slots[i] = fp<<32 | units
			if s.n++; s.n*4 > len(s.slots)*3 {
				s.grow()
			}
			return
		case v>>32 == fp:
			if units > v&math.MaxUint32 {
				s.slots[i] = fp<<32 | units
			}
			return
		}
	}
}

// grow doubles the table. A slot's position is given by its fingerprint's
// low bits, which the slot keeps, so a rehash needs no hash.
func (s *bucketIndex) grow() {
	old := s.slots
	s.slots = make([]uint64, 2*len(old))
	mask := uint64(len(s.slots) - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		for i := (v >> 32) & mask; ; i = (i + 1) & mask {
			if s.slots[i] == 0 {
				s.slots[i] = v
				break
			}
		}
	}
}

// toBloom replaces the table by a Bloom filter of its fingerprints.
func (s *bucketIndex) toBloom() {
	s.bloom = newBloom(bloomFactor * indexCap)
	for _, v := range s.slots {
		if v != 0 {
			s.bloom.add(v >> 32)
		}
	}
	s.full, s.slots = true, nil
}

// bloom is a blocked Bloom filter of 32-bit fingerprints: each sets 6 bits
// of one 512-bit block (one cache line), 10 bits a value, about 1% false
// positives at capacity. It never says a fingerprint it was given is
// absent. Its first word counts the fingerprints added and the capacity.
type bloom []uint64

func newBloom(capacity int) bloom {
	blocks := max(8, capacity*10/512) // small ones (in tests) far from full
	b := make(bloom, 2+8*blocks)
	b[1] = uint64(capacity)
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
