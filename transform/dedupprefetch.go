package transform

import (
	"hash/maphash"

	"github.com/connector-dev/connector/record"
)

// PrefetchWindow is how many records ahead a worker lets the chain
// prefetch (Chain.Prefetch): enough that the loads of a window overlap,
// few enough that what they load is still in the cache when the records'
// lookups come (a window's slots are 3 cache lines a record).
const PrefetchWindow = 64

// prefetch loads the index slots that the lookups of rs will probe first,
// one after the other in a loop of independent loads, so that their cache
// misses overlap. A lookup of one record at a time waits for each miss in
// turn: the tables of a dedup over 1M keys are tens of MB, and the first
// probe of each bucket was 2 of the 17 CPU s of a 10M-record run
// (bench/profile --dedup u).
//
// It changes nothing: a record whose key field is not where KeyField says
// (useKeyField is false), or has escapes, is left out, and a probe of a
// slot the lookup will not use (a table that grows in between, a bucket
// opened later) costs only its load.
func (t *Dedup) prefetch(rs []record.Record) {
	if !t.useKeyField || len(t.index.sets) == 0 {
		return
	}
	for len(rs) > 0 {
		n := min(len(rs), PrefetchWindow)
		t.prefetchWindow(rs[:n])
		rs = rs[n:]
	}
}

// prefetchWindow prefetches for at most PrefetchWindow records in two
// passes: the first works out each record's fingerprint and bucket, the
// second only loads, a few instructions a load, so that the CPU has many
// of them in flight at once (in one pass, the hashing between two loads
// left room for two or three).
func (t *Dedup) prefetchWindow(rs []record.Record) {
	var fps [PrefetchWindow]uint64
	var buckets [PrefetchWindow]int64
	n := 0
	for i := range rs {
		r := &rs[i]
		raw, ok := markedKey(r)
		if !ok || raw[0] == 'n' {
			continue // no key, or null: applyDoc looks nothing up
		}
		form, direct := hashedForm(raw)
		if !direct {
			continue // escaped: left out
		}
		fps[n] = maphash.Bytes(t.index.seed, form) >> 32
		buckets[n] = t.bucket(recordTime(r))
		n++
	}
	var sets [3]*bucketIndex
	last := int64(-1 << 63)
	var acc uint64
	for i := range n {
		if b := buckets[i]; b != last {
			last = b
			for j := range sets {
				sets[j] = t.index.sets[b+1-int64(j)] // b+1, b, b-1: what lookup may probe
			}
		}
		fp := fps[i]
		for _, s := range sets {
			if s == nil {
				continue
			}
			acc ^= s.slots[home(fp, len(s.slots))]
			if s.old != nil { // a table that grows: find looks there too
				acc ^= s.old[home(fp, len(s.old))]
			}
			t.prefetched++
		}
	}
	t.probe ^= acc
}
