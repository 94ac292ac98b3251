package transform

import (
	"hash/maphash"
	"math"
)

// indexCap is the most values a bucket's index holds (a table of 32 MB
// at the most); beyond it the index is dropped and lookups in that bucket
// read the KV.
var indexCap = 1 << 21 // a variable for tests

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
	full       bool // past indexCap values: dropped, unknown
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
		return
	}
	units := uint64(min(max((first-s.start+s.res-1)/s.res, 0), math.MaxUint32-1)) + 1
	fp, mask := h>>32, uint64(len(s.slots)-1)
	for i := fp & mask; ; i = (i + 1) & mask {
		switch v := s.slots[i]; {
		case v == 0:
			if s.n >= indexCap {
				s.full, s.slots = true, nil
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
