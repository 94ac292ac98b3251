package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// A Dedup writes its numbered entries in runs: the entries of one block of
// numbers (runLen of them, see blockShift), all of one key group, in one
// KV entry. The KV's cost is per entry (a memtable insert, a changelog
// record, a flushed table's key), not per byte: one entry per run instead
// of one per value took about 28% off the dedup's CPU in a prototype
// (bench/RESULTS.md, "What fewer Pebble entries would give the dedup").
//
//	key:   the bucket's prefix (dedup.go), runTag, the run's first number
//	       (uint32 big-endian, a multiple of runLen)
//	value: runFormat, then each entry in number order: its first
//	       sighting (int64 big-endian Unix ms), the value's length
//	       (uvarint) and the value (as in a by-value key)
//
// A bucket gives each key group that writes to it a block of numbers at a
// time (bucketIndex.reserve); the run fills in memory (openRun) and is
// written when full, and as far as it got at every Flush (before the
// state's snapshot: a run is written again as it grows) and when it is
// closed to bound the memory of a bucket's runs (maxOpenBytes; a closed
// run is taken up again at its key group's next write). A lookup of an
// entry of a run still open reads it in memory, one of a written run the
// run cache (runCache) or the KV. After a restore the runs not full are
// not continued: new blocks begin after the numbers loaded.
// Entries numbered one per KV entry (numberTag) are those of the version
// before runs; a bucket holding some is read both ways (numberedKeys).
const (
	runTag    = 0x02 // after the bucket: a run of numbered entries
	runFormat = 3    // a run's value
	runLen    = 1 << blockShift
)

// openRun is the run a key group is filling in a bucket.
type openRun struct {
	n0      uint32 // its first number
	count   int    // its entries
	written int    // of them, in the KV
	used    uint64 // the Dedup's record count at its last entry
	buf     []byte // its value: runFormat, then the entries
}

// appendRunEntry appends an entry first seen at first of value v to a
// run's value.
func appendRunEntry(dst []byte, first int64, v []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(first))
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

// eachRunEntry calls fn with each entry of the run value v (after its
// format byte) in order, until fn returns false; an error if v is not a
// run's value.
func eachRunEntry(v []byte, fn func(i int, first int64, val []byte) bool) error {
	if len(v) < 1 || v[0] != runFormat {
		return fmt.Errorf("unknown format (%d bytes)", len(v))
	}
	v = v[1:]
	for i := 0; len(v) > 0; i++ {
		if len(v) < 9 {
			return fmt.Errorf("entry %d cut short", i)
		}
		first := int64(binary.BigEndian.Uint64(v))
		l, k := binary.Uvarint(v[8:])
		if k <= 0 || uint64(len(v)-8-k) < l || i >= runLen {
			return fmt.Errorf("entry %d malformed", i)
		}
		if !fn(i, first, v[8+k:8+k+int(l)]) {
			return nil
		}
		v = v[8+k+int(l):]
	}
	return nil
}

// runEntry returns the first sighting of the current value in entry i of
// the run value v: ok is false if the run has no entry i or it is another
// value's (of the same fingerprint).
func (t *Dedup) runEntry(v []byte, i int) (first int64, ok bool, err error) {
	err = eachRunEntry(v, func(j int, f int64, val []byte) bool {
		if j < i {
			return true
		}
		first, ok = f, bytes.Equal(val, t.val)
		return false
	})
	return first, ok && err == nil, err
}

// runKey is the key of the run beginning at number n0 of bucket b of the
// generation g, in t.key.
func (t *Dedup) runKey(g *keySpan, b int64, n0 uint32) []byte {
	t.key = binary.BigEndian.AppendUint32(append(g.bucketPrefix(t.key[:0], b), runTag), n0)
	return t.key
}

// keyGroup is the key group of the current record: the KV's, or 0 for a
// KV without key groups.
func (t *Dedup) keyGroup() uint16 {
	if t.kgs == nil {
		return 0
	}
	return uint16(t.kgs.KeyGroup())
}

// writeNumbered writes the current value's first sighting at now as an
// entry of the open run of the record's key group in bucket b (index s),
// opening one if it has none; false if the bucket has no numbers left (the
// caller writes by value).
func (t *Dedup) writeNumbered(b int64, s *bucketIndex, now int64) (bool, error) {
	kg := t.keyGroup()
	r := s.runs[kg]
	if r == nil {
		if s.openBytes >= maxOpenBytes {
			if err := t.closeRuns(b, s, kg); err != nil {
				return false, err
			}
		}
		var err error
		if r, err = t.openRun(b, s, kg); r == nil || err != nil {
			return false, err
		}
	}
	s.put(t.hash>>32, r.n0+uint32(r.count), now)
	had := len(r.buf)
	r.buf = appendRunEntry(r.buf, now, t.val)
	s.openBytes += len(r.buf) - had
	r.used = t.records
	if r.count++; r.count < runLen {
		return true, nil
	}
	delete(s.runs, kg)
	s.openBytes -= len(r.buf)
	err := t.kv.Set(t.runKey(&t.gen, b, r.n0), r.buf)
	t.freeRuns = append(t.freeRuns, r)
	return true, err
}

// maxOpenBytes bounds the bytes of a bucket's open runs (up to about 2 KB
// each with 20-byte values): a worker of many key groups
// (pipeline.max_parallelism in the thousands) has many runs that fill
// slowly. When a run is to open past it, the least recently written half
// of the bucket's runs are written and closed; a key group's closed run
// not full is taken up again (read back) at its next write, so that no
// numbers are lost (a bucket whose numbers run out writes by value). With
// the default 128 key groups (at most 128 runs a bucket) it is never
// reached; with 8,192 a worker, records spread evenly and 24-byte values,
// about one record in seven reads a closed run back (bench/RESULTS.md).
var maxOpenBytes = 8 << 20 // a variable for tests

// openRun opens a run for key group kg (the record's) in bucket b (index
// s): the key group's closed run not full if it has one, read back, else
// a new block of numbers; nil when the bucket has none left.
func (t *Dedup) openRun(b int64, s *bucketIndex, kg uint16) (*openRun, error) {
	if s.runs == nil {
		s.runs = make(map[uint16]*openRun)
	}
	if n0, ok := s.closed[kg]; ok {
		delete(s.closed, kg)
		v, found, err := t.kv.Get(t.runKey(&t.gen, b, n0))
		if err != nil {
			return nil, err
		}
		if found {
			r := t.newRun(n0)
			r.buf = append(r.buf[:0], v...)
			if err := eachRunEntry(r.buf, func(int, int64, []byte) bool { r.count++; return true }); err != nil {
				return nil, fmt.Errorf("dedup entry %q: %w", t.key, err)
			}
			r.written = r.count
			t.cache.forget(s.id, kg, n0) // it grows again
			s.runs[kg] = r
			s.openBytes += len(r.buf)
			return r, nil
		}
	}
	n0, ok := s.reserve()
	if !ok {
		return nil, nil
	}
	r := t.newRun(n0)
	s.runs[kg] = r
	s.openBytes += len(r.buf)
	return r, nil
}

// closeRuns writes the least recently written half of bucket b's (index
// s) open runs, each in its key group, and closes them, noting those not
// full (bucketIndex.closed); the KV is left in key group kg (the
// record's). Closing them all made a worker of more key groups than the
// bound holds runs of, its records spread evenly, take a run up again (a
// KV read) and write it again for nearly every record.
func (t *Dedup) closeRuns(b int64, s *bucketIndex, kg uint16) error {
	stamps := t.stamps[:0]
	for _, r := range s.runs {
		stamps = append(stamps, r.used)
	}
	slices.Sort(stamps)
	cut := stamps[(len(stamps)-1)/2]
	t.stamps = stamps
	for rkg, r := range s.runs {
		if r.used > cut {
			continue
		}
		if err := t.writeRun(b, rkg, r); err != nil {
			return err
		}
		if r.count < runLen {
			if s.closed == nil {
				s.closed = make(map[uint16]uint32)
			}
			s.closed[rkg] = r.n0
		}
		s.openBytes -= len(r.buf)
		t.freeRuns = append(t.freeRuns, r)
		delete(s.runs, rkg)
	}
	if t.kgs != nil {
		return t.kgs.SetKeyGroup(int(kg))
	}
	return nil
}

// newRun is an empty open run from number n0, on a buffer of a written
// one when there is one.
func (t *Dedup) newRun(n0 uint32) *openRun {
	var buf []byte
	if k := len(t.freeRuns); k > 0 {
		buf = t.freeRuns[k-1].buf[:0]
		t.freeRuns = t.freeRuns[:k-1]
	}
	return &openRun{n0: n0, buf: append(buf, runFormat)}
}

// getNumbered reads the first sighting of the current value in entry n of
// bucket c (index s) of the generation g: in its open run, or in its run
// in the KV, or (in a bucket that has them) its entry of the version
// before runs.
func (t *Dedup) getNumbered(g *keySpan, c int64, s *bucketIndex, n uint32) (int64, bool, error) {
	n0, i := n&^(runLen-1), int(n&(runLen-1))
	kg := t.keyGroup()
	if r := s.runs[kg]; r != nil && r.n0 == n0 {
		return t.runEntry(r.buf, i)
	}
	cached := t.cache.slot(s.id, kg, n0)
	v, ok := cached.val, len(cached.val) > 0 && cached.set == s.id && cached.kg == kg && cached.n0 == n0
	if !ok {
		var err error
		if v, ok, err = t.kv.Get(t.runKey(g, c, n0)); err != nil {
			return 0, false, err
		}
		if ok && len(v) <= maxCachedRun && v[0] == runFormat {
			cached.set, cached.kg, cached.n0 = s.id, kg, n0
			cached.val = append(cached.val[:0], v...)
		}
	}
	if ok {
		first, found, err := t.runEntry(v, i)
		if err != nil {
			return 0, false, fmt.Errorf("dedup entry %q: %w", t.key, err)
		}
		if found {
			return first, true, nil
		}
	}
	if !s.numberedKeys {
		return 0, false, nil
	}
	return t.get(t.numberKey(g, c, n), true)
}

// Flush removes the buckets gone stale (expireStale): those no record came
// to since the last Flush, or for staleEvery records, and writes every open
// run's entries not yet in the KV, each in its key group; the KV is left in
// the last one's (see Flusher).
//
// The look every staleEvery records drops a bucket left alone for between
// one and two staleEvery; Flush drops it once left alone for one, so that
// the buckets the lagging partitions passed in a barrier's interval are
// not written to be removed at the next barrier. At the end of
// bench/state-growth's backlog (record time 1,600 times faster than the
// clock), the lagging partitions passed 23 buckets between its last two
// barriers, 3,750 entries each a worker, beside the 45,000 of the three
// kept, and left 7 of them alone for more than staleEvery records (the
// state database's peak there was not measurably lower: bench/RESULTS.md,
// "2026-12-07, 18:30").
func (t *Dedup) Flush() error {
	since := t.flushed
	if t.records > staleEvery {
		since = max(since, t.records-staleEvery)
	}
	if err := t.expireStale(since); err != nil {
		return fmt.Errorf("%w: dedup flush: %w", ErrState, err)
	}
	t.flushed = t.records
	for b, s := range t.index.sets {
		if err := t.flushRuns(b, s); err != nil {
			return fmt.Errorf("%w: dedup flush: %w", ErrState, err)
		}
	}
	return nil
}

// flushRuns writes what bucket b's (index s) open runs hold and the KV
// does not, each in its key group.
func (t *Dedup) flushRuns(b int64, s *bucketIndex) error {
	for rkg, r := range s.runs {
		if err := t.writeRun(b, rkg, r); err != nil {
			return err
		}
	}
	return nil
}

// writeRun writes what the open run r of key group kg in bucket b holds
// and the KV does not, in kg.
func (t *Dedup) writeRun(b int64, kg uint16, r *openRun) error {
	if r.written == r.count {
		return nil
	}
	if t.kgs != nil {
		if err := t.kgs.SetKeyGroup(int(kg)); err != nil {
			return err
		}
	}
	if err := t.kv.Set(t.runKey(&t.gen, b, r.n0), r.buf); err != nil {
		return err
	}
	r.written = r.count
	return nil
}

// runCache holds runs that lookups read from the KV, so that the repeats
// of a run's values (a dedup whose records are mostly repeats) are found
// in memory, not by a KV read each (with Pebble, an iterator: about 2 µs).
// A run read from the KV is one no Dedup holds open, so it does not change
// (runs are written again only while open, a block is reserved once, and
// a run taken up again is forgotten); a cached run is known by its bucket's index (id: a
// bucket expired and begun again is another, whose runs begin at number 0
// again), key group and first number. Direct-mapped: a slot holds the last
// run read of those that map to it.
type runCache struct {
	slots []cachedRun
}

// runCacheSlots is the cache's size: with 1.4 KB runs (20-byte values)
// about 5.6 MB a Dedup when full. 4,096 rather than 1,024: a dedup of 100k
// values of which 8 records in 9 are repeats (bench/run's
// connector-dedup-repeats, ~800 runs a worker in each of two buckets)
// spends 8.5% less CPU (in process, 3 pairs: 18.4-18.6 against 19.9-20.4
// CPU s for 10M records) for 13 MB more peak RSS (150 against 137 MB); a
// dedup whose lookups miss (1M values, every record new) fills none of it.
const (
	runCacheBits  = 12
	runCacheSlots = 1 << runCacheBits
)

// maxCachedRun is the largest run value cached (values of 64 bytes).
const maxCachedRun = 64 * (runLen + 10)

type cachedRun struct {
	set uint64 // the id of the bucket's index
	kg  uint16
	n0  uint32
	val []byte // empty: the slot is
}

// forget empties the slot of the run of key group kg from number n0 in
// the bucket whose index has id set, if it holds that run.
func (c *runCache) forget(set uint64, kg uint16, n0 uint32) {
	if c.slots == nil {
		return
	}
	if e := c.slot(set, kg, n0); e.set == set && e.kg == kg && e.n0 == n0 {
		e.val = e.val[:0]
	}
}

// slot is the slot of the run of key group kg from number n0 in the
// bucket whose index has id set.
func (c *runCache) slot(set uint64, kg uint16, n0 uint32) *cachedRun {
	if c.slots == nil {
		c.slots = make([]cachedRun, runCacheSlots)
	}
	h := (set*0x9e3779b97f4a7c15 ^ uint64(kg)<<32 ^ uint64(n0>>blockShift)) * 0xbf58476d1ce4e5b9
	return &c.slots[h>>(64-runCacheBits)]
}
