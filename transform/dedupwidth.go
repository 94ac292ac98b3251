package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// A Dedup's buckets are one TTL wide, and a bucket's number is its time
// divided by that width, so entries written under another ttl (the config
// changed between two runs) are in buckets whose numbers mean other times.
// Read as the current width's, they were missed (repeats kept), or
// expired at once, or never (their numbers above any the new width
// reaches: their entries and tables stayed for good). So a width that is
// not the one the state began with goes into the keys, and each width's
// entries are a generation of their own:
//
//   - The plain layout (dedup.go's key layout) is the width the state began
//     with, which a marker in each key group it wrote records (a restore or
//     a rescale may bring any subset of the key groups):
//     "transform/dedup/" Name "/" 0x00 0x00 "width" -> width (int64
//     big-endian ms). A state of an earlier version, without marker, is
//     taken as of the current width.
//   - Any other width's entries are under "transform/dedup/" Name "/" 0x00
//     0x01 width (int64 big-endian ms), then the bucket and the rest as in
//     the plain layout. (The plain layout's buckets begin with 0x40 to 0xC0:
//     record times are within ±2^62 ms.)
//
// The current ttl's generation takes the writes and is looked up and
// expired as dedup.go says. The others are read-only: a lookup reads each
// of their buckets that may hold a first sighting within the current TTL,
// and a generation goes whole once the newest record time seen is two
// current TTLs past the newest first sighting it holds (as the entries of
// earlier versions without buckets).
const (
	markerTag = 0x00 // after the namespace and bucketTag: the plain layout's width
	widthTag  = 0x01 // after the namespace and bucketTag: a width, then a bucket
	plainLo   = 0x02 // the plain layout's buckets begin at or above it
)

var markerName = []byte("width")

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
}

// markerKey is the key of the plain layout's width marker.
func (t *Dedup) markerKey() []byte {
	return append(append(slices.Clone(t.ns), bucketTag, markerTag), markerName...)
}

// loadWidth reads the width the plain layout's entries were written with:
// the current ttl if no key group has a marker (a new state, or one of an
// earlier version).
func (t *Dedup) loadWidth() (int64, error) {
	width := int64(0)
	key := t.markerKey()
	lo := append(slices.Clone(t.ns), bucketTag, markerTag)
	hi := append(slices.Clone(t.ns), bucketTag, widthTag)
	err := t.kv.Scan(lo, hi, func(k, v []byte) error {
		if !bytes.Equal(k, key) || len(v) != 8 {
			return fmt.Errorf("dedup entry %q: unknown format (%d bytes)", k, len(v))
		}
		switch w := int64(binary.BigEndian.Uint64(v)); {
		case w < 1:
			return fmt.Errorf("dedup entry %q: bucket width %d", k, w)
		case width != 0 && w != width:
			return fmt.Errorf("dedup entries of two plain bucket widths, %d and %d ms: the state holds two jobs' dedups of one name", width, w)
		default:
			width = w
		}
		return nil
	})
	if width == 0 {
		width = t.ttl
	}
	return width, err
}

// markWidth writes the plain layout's width marker into key group kg, once
// a Dedup, when the plain layout takes the writes.
func (t *Dedup) markWidth(kg uint16) error {
	if t.gen.width != 0 {
		return nil // the keys say their width
	}
	if t.marked == nil {
		t.marked = new([1 << 10]uint64)
	}
	w, bit := kg>>6, uint64(1)<<(kg&63)
	if t.marked[w]&bit != 0 {
		return nil
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(t.ttl))
	if err := t.kv.Set(t.markerKey(), v[:]); err != nil {
		return err
	}
	t.marked[w] |= bit
	return nil
}

// lookupOld returns the latest first sighting of the current value among
// first (if seen) and the earlier generations' entries that may be within
// the current TTL at record time now.
func (t *Dedup) lookupOld(now, first int64, seen bool) (int64, bool, error) {
	cutoff := now - t.ttl
	for _, g := range t.old {
		for c, s := range g.sets {
			if (c+1)*g.ttl-1 <= cutoff {
				continue // every entry of it was first seen at cutoff or before
			}
			var err error
			if first, seen, _, err = t.latestIn(&g.span, c, s, cutoff, first, seen); err != nil {
				return 0, false, err
			}
		}
	}
	return first, seen, nil
}

// expireOld removes each earlier generation whose entries no record a TTL
// older than the newest seen can find within its TTL any more.
func (t *Dedup) expireOld() error {
	for i := 0; i < len(t.old); {
		g := t.old[i]
		if t.maxSeen-2*t.ttl < g.newest {
			i++
			continue
		}
		if err := t.kv.Expire(g.span.lo, g.span.hi); err != nil {
			return err
		}
		t.old = slices.Delete(t.old, i, i+1)
	}
	return nil
}
