package transform

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"runtime"
	"slices"

	"github.com/connector-dev/connector/internal/offheap"
)

// A Dedup's buckets are one TTL wide, and a bucket's number is its time
// divided by that width, so entries written under another ttl (the config
// changed between two runs) are in buckets whose numbers mean other times.
// Read as the current width's, they were missed (repeats kept), or
// expired at once, or never (their numbers above any the new width
// reaches: their entries and tables stayed for good). So the keys name
// their buckets' width, and each width's entries are a generation of their
// own:
//
//	"transform/dedup/" Name "/" 0x00 0x01, the width (int64 big-endian
//	ms), then the bucket and the rest as dedup.go's key layout says.
//
// Earlier versions wrote that layout without the width ("transform/
// dedup/" Name "/" 0x00 and the bucket; its buckets begin with 0x40 to
// 0xC0, record times being within ±2^62 ms): a generation taken as of the
// current ttl, which the state does not record.
//
// The current ttl's generation takes the writes and is looked up and
// expired as dedup.go says. The others are read-only: a lookup reads their
// buckets that may hold a first sighting within the current TTL, and a
// bucket of theirs goes once the newest record time seen is two current
// TTLs past its end (no record a TTL older than the newest can find it
// within its TTL), and the generation with its last bucket. Several
// workers' state merged by a rescale needs nothing more: every key says
// its width.
const (
	widthTag = 0x01 // after the namespace and bucketTag: a width, then a bucket
	plainLo  = 0x02 // an earlier version's buckets begin at or above it
)

// keySpan is where one width's entries are: head, then the bucket (int64
// big-endian, sign bit flipped), then a number or a value; lo and hi
// bound all of them.
type keySpan struct {
	head, lo, hi []byte
	width        int64 // 0: the plain layout
}

// plainSpan is the plain layout's span in namespace ns.
func plainSpan(ns []byte) keySpan {
	head := append(slices.Clone(ns), bucketTag)
	return keySpan{head: head, lo: append(slices.Clone(head), plainLo), hi: append(slices.Clone(ns), bucketTag+1)}
}

// widthSpan is the span of the entries of buckets width ms wide, in
// namespace ns, outside the plain layout.
func widthSpan(ns []byte, width int64) keySpan {
	head := binary.BigEndian.AppendUint64(append(slices.Clone(ns), bucketTag, widthTag), uint64(width))
	hi := binary.BigEndian.AppendUint64(append(slices.Clone(ns), bucketTag, widthTag), uint64(width)+1)
	return keySpan{head: head, lo: head, hi: hi, width: width}
}

// bucketPrefix appends g's head and bucket b to dst.
func (g *keySpan) bucketPrefix(dst []byte, b int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, g.head...), uint64(b)^1<<63)
}

// oldGeneration is the entries of a width other than the current ttl's.
type oldGeneration struct {
	index  // its buckets, ttl its width
	span   keySpan
	newest int64 // the newest first sighting it holds
	// filter holds the fingerprints of all its entries (built at load: it
	// takes no writes), so that a lookup of a value it does not hold, most
	// of them, costs one probe however many buckets it has.
	filter    bloom
	filterMem *offheap.Words
	fps       []uint32 // while it loads: its entries' fingerprints
}

// newOldGeneration is an empty generation of the width and keys of span.
func newOldGeneration(seed maphash.Seed, span keySpan, width int64) *oldGeneration {
	g := &oldGeneration{span: span, index: newIndex(seed, width), newest: math.MinInt64}
	g.reset()
	return g
}

// free gives g's tables and filter back at once (bucketIndex.free), as g
// is dropped.
func (g *oldGeneration) free() {
	g.reset()
	g.filterMem.Free()
	g.filter, g.filterMem = nil, nil
}

// loaded counts an entry of g, first seen at first, of fingerprint fp.
func (g *oldGeneration) loaded(first int64, fp uint32) {
	g.newest = max(g.newest, first)
	g.fps = append(g.fps, fp)
}

// seal ends g's load: its buckets' and its own filter.
func (g *oldGeneration) seal() {
	for _, s := range g.sets {
		s.seal()
	}
	g.filterMem = newBloom(len(g.fps))
	g.filter = bloom(g.filterMem.W)
	for _, fp := range g.fps {
		g.filter.add(uint64(fp))
	}
	g.fps = nil
}

// mayHold says whether g may hold an entry of a value of hash h.
func (g *oldGeneration) mayHold(h uint64) bool {
	ok := g.filter.has(h >> 32)
	runtime.KeepAlive(g) // g.filterMem: the filter's memory (internal/offheap)
	return ok
}

// lookupOld returns the latest first sighting of the current value among
// first (if seen) and the earlier generations' entries that may be within
// the current TTL at record time now.
func (t *Dedup) lookupOld(now, first int64, seen bool) (int64, bool, error) {
	cutoff := now - t.ttl
	for _, g := range t.old {
		if !g.mayHold(t.hash) {
			continue
		}
		// The buckets that may hold a first sighting after cutoff: a
		// range, or the buckets the generation still has if fewer.
		lo, hi := bucketOf(cutoff+1, g.ttl), bucketOf(g.newest, g.ttl)
		if hi < lo {
			continue
		}
		var err error
		if uint64(hi-lo) < uint64(len(g.sets)) { // hi-lo may pass 2^63 (times ±2^62 apart)
			for c := hi; c >= lo && err == nil; c-- {
				if s := g.sets[c]; s != nil {
					first, seen, _, err = t.latestIn(&g.span, c, s, cutoff, first, seen)
				}
			}
		} else {
			for c, s := range g.sets {
				if c >= lo && c <= hi && err == nil {
					first, seen, _, err = t.latestIn(&g.span, c, s, cutoff, first, seen)
				}
			}
		}
		if err != nil {
			return 0, false, err
		}
	}
	return first, seen, nil
}

// expireOld removes the buckets of the earlier generations that no record
// a TTL older than the newest seen can find within its TTL any more: each
// generation whole once past its newest entry, each bucket past its end
// when prune is set (the newest record time entered another bucket).
func (t *Dedup) expireOld(prune bool) error {
	limit := t.maxSeen - 2*t.ttl
	for i := 0; i < len(t.old); {
		g := t.old[i]
		if g.newest <= limit {
			if err := t.kv.Expire(g.span.lo, g.span.hi); err != nil {
				return err
			}
			g.free()
			t.old = slices.Delete(t.old, i, i+1)
			continue
		}
		for c := range g.sets {
			if !prune {
				break
			}
			if (c+1)*g.ttl-1 > limit {
				continue
			}
			if err := t.kv.Expire(g.span.bucketPrefix(nil, c), g.span.bucketPrefix(nil, c+1)); err != nil {
				return err
			}
			g.drop(c)
		}
		i++
	}
	return nil
}
