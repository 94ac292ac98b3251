package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/connector-dev/connector/record"
)

// collidingIDs returns two different ids whose values share a 32-bit
// fingerprint under d's hash seed (a birthday search: ~2^16 tries).
func collidingIDs(t *testing.T, d *Dedup) (string, string) {
	t.Helper()
	seen := map[uint64]string{}
	for i := range 1 << 22 {
		id := fmt.Sprintf("id-%d", i)
		fp := maphash.Bytes(d.index.seed, []byte(`"`+id)) >> 32
		if other, ok := seen[fp]; ok {
			return other, id
		}
		seen[fp] = id
	}
	t.Fatal("no two ids share a fingerprint")
	return "", ""
}

// Two values sharing a fingerprint are told apart by the value kept in
// their entries: neither is taken for the other, and each one's repeats are
// dropped, before and after a restart, until its own TTL ends.
func TestDedupTellsApartValuesThatShareAFingerprint(t *testing.T) {
	kv := NewMemKV()
	d := newDedup(t, kv, "d", "id", time.Minute)
	a, b := collidingIDs(t, d)
	rec := func(id string, s int) *record.Record {
		return recAt(`{"id":"`+id+`"}`, t0.Add(time.Duration(s)*time.Second))
	}
	for _, step := range []struct {
		id   string
		at   int
		keep bool
	}{
		{a, 0, true}, {b, 1, true}, {a, 2, false}, {b, 3, false}, {a, 59, false},
	} {
		if got := mustApply(t, d, rec(step.id, step.at)); got != step.keep {
			t.Errorf("%s at +%d s: keep = %v, want %v", step.id, step.at, got, step.keep)
		}
	}
	flushed(t, d)
	restarted := newDedup(t, kv, "d", "id", time.Minute)
	// restarted has another seed: make its two ids collide too.
	c, e := collidingIDs(t, restarted)
	for _, step := range []struct {
		id   string
		at   int
		keep bool
	}{
		{a, 30, false}, {b, 30, false}, {c, 31, true}, {e, 32, true}, {c, 33, false}, {e, 34, false},
		{a, 60, true}, {b, 60, false}, {b, 61, true},
	} {
		if got := mustApply(t, restarted, rec(step.id, step.at)); got != step.keep {
			t.Errorf("after a restart, %s at +%d s: keep = %v, want %v", step.id, step.at, got, step.keep)
		}
	}
}

// orderKV records the keys a KV is given to write.
type orderKV struct {
	*MemKV
	sets [][]byte
}

func (kv *orderKV) Set(k, v []byte) error {
	kv.sets = append(kv.sets, bytes.Clone(k))
	return kv.MemKV.Set(k, v)
}

// A dedup writes a bucket's new entries in runs of runLen, one KV entry
// each, under ascending keys whatever their values, so that the sorted
// runs a KV like Pebble writes from them do not overlap (and are not
// merged again and again); a Flush writes the run being filled.
func TestDedupWritesABucketsEntriesInKeyOrder(t *testing.T) {
	kv := &orderKV{MemKV: NewMemKV()}
	d := newDedup(t, kv, "d", "id", time.Hour)
	for i := range 5000 {
		mustApply(t, d, recAt(fmt.Sprintf(`{"id":%d}`, (i*7919)%100_003), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	if len(kv.sets) != 5000/runLen {
		t.Fatalf("%d writes for 5,000 new values, want %d (the full runs)", len(kv.sets), 5000/runLen)
	}
	if flushed(t, d); len(kv.sets) != 5000/runLen+1 {
		t.Fatalf("%d writes after a flush, want %d", len(kv.sets), 5000/runLen+1)
	}
	if flushed(t, d); len(kv.sets) != 5000/runLen+1 {
		t.Fatalf("%d writes after a second flush with nothing new, want %d", len(kv.sets), 5000/runLen+1)
	}
	entries := 0
	for k, v := range kv.m {
		if err := eachRunEntry(v, func(int, int64, []byte) bool { entries++; return true }); err != nil {
			t.Fatalf("run %q: %v", k, err)
		}
	}
	if entries != 5000 {
		t.Fatalf("the runs hold %d entries, want 5000", entries)
	}
	for i := 1; i < len(kv.sets); i++ {
		if bytes.Compare(kv.sets[i-1], kv.sets[i]) >= 0 {
			t.Fatalf("write %d under %q, after %q", i, kv.sets[i], kv.sets[i-1])
		}
	}
}

// State written by the version before numbered entries (one entry per
// value and bucket, keyed by the value) is read after an upgrade: its
// repeats are dropped until their TTL ends, and new values are numbered
// beside it.
func TestDedupReadsTheByValueEntriesOfThePreviousVersion(t *testing.T) {
	kv := &orderKV{MemKV: NewMemKV()}
	d := newDedup(t, kv, "d", "id", time.Minute)
	old := func(value string, first time.Time) {
		b := d.bucket(first.UnixMilli())
		var v [9]byte
		v[0] = dedupFormat
		binary.BigEndian.PutUint64(v[1:], uint64(first.UnixMilli()))
		prev := plainSpan(d.ns) // that version's keys: no width
		if err := kv.MemKV.Set(append(prev.bucketPrefix(nil, b), value...), v[:]); err != nil {
			t.Fatal(err)
		}
	}
	old(`"a`, t0)
	old(`7`, t0.Add(-30*time.Second))
	if mustApply(t, d, recAt(`{"id":"a"}`, t0.Add(10*time.Second))) || mustApply(t, d, recAt(`{"id":7}`, t0.Add(10*time.Second))) {
		t.Error("a repeat of a previous version's entry within its TTL was kept")
	}
	if !mustApply(t, d, recAt(`{"id":7}`, t0.Add(31*time.Second))) {
		t.Error("a value past the TTL of its previous version's entry was dropped")
	}
	if flushed(t, d); len(kv.sets) != 1 || !bytes.HasSuffix(kv.sets[0], []byte{runTag, 0, 0, 0, 0}) {
		t.Errorf("the new window was written as %q, want the run of entries 0 on", kv.sets)
	}
	if mustApply(t, d, recAt(`{"id":7}`, t0.Add(32*time.Second))) || mustApply(t, d, recAt(`{"id":"a"}`, t0.Add(59*time.Second))) {
		t.Error("a repeat was kept")
	}
}

// groupedKV is a KV with key groups, as package state's Store: Get, Set
// and Delete act in the current key group, Scan passes a key once for each
// key group that holds it.
type groupedKV struct {
	kg uint16
	m  map[uint16]*MemKV
}

func (kv *groupedKV) in() *MemKV {
	if kv.m[kv.kg] == nil {
		kv.m[kv.kg] = NewMemKV()
	}
	return kv.m[kv.kg]
}
func (kv *groupedKV) KeyGroup() int                      { return int(kv.kg) }
func (kv *groupedKV) SetKeyGroup(kg int) error           { kv.kg = uint16(kg); return nil }
func (kv *groupedKV) Get(k []byte) ([]byte, bool, error) { return kv.in().Get(k) }
func (kv *groupedKV) Set(k, v []byte) error              { return kv.in().Set(k, v) }
func (kv *groupedKV) Delete(k []byte) error              { return kv.in().Delete(k) }
func (kv *groupedKV) Expire(lo, hi []byte) error {
	for _, m := range kv.m {
		m.Expire(lo, hi)
	}
	return nil
}
func (kv *groupedKV) Scan(lo, hi []byte, fn func(k, v []byte) error) error {
	for _, m := range kv.m {
		if err := m.Scan(lo, hi, fn); err != nil {
			return err
		}
	}
	return nil
}

// After a rescale merges two workers' state, their entries carry the same
// numbers in different key groups: each value is still found in its own
// key group, and new entries take numbers past both workers'.
func TestDedupAfterAMergeOfTwoWorkersStateFindsEveryValueInItsKeyGroup(t *testing.T) {
	merged := &groupedKV{m: map[uint16]*MemKV{}}
	for kg, prefix := range map[uint16]string{1: "a", 2: "b"} {
		worker := &groupedKV{kg: kg, m: map[uint16]*MemKV{}}
		d := newDedup(t, worker, "d", "id", time.Hour)
		for i := range 100 {
			mustApply(t, d, recAt(fmt.Sprintf(`{"id":"%s%d"}`, prefix, i), t0))
		}
		flushed(t, d)
		merged.m[kg] = worker.m[kg]
	}
	d := newDedup(t, merged, "d", "id", time.Hour)
	for i := range 100 {
		for kg, prefix := range map[uint16]string{1: "a", 2: "b"} {
			merged.kg = kg
			if mustApply(t, d, recAt(fmt.Sprintf(`{"id":"%s%d"}`, prefix, i), t0.Add(time.Second))) {
				t.Fatalf("after the merge, a repeat of %s%d in key group %d was kept", prefix, i, kg)
			}
		}
	}
	merged.kg = 1
	if !mustApply(t, d, recAt(`{"id":"b7"}`, t0.Add(time.Second))) {
		t.Error("a value of key group 2 was found in key group 1")
	}
	if !mustApply(t, d, recAt(`{"id":"new"}`, t0.Add(time.Second))) {
		t.Error("a new value was dropped")
	}
	if flushed(t, d); runEntries(t, merged.m[1]) != 102 || runEntries(t, merged.m[2]) != 100 {
		t.Errorf("key groups hold %d and %d entries, want 102 and 100 (no entry overwritten)", runEntries(t, merged.m[1]), runEntries(t, merged.m[2]))
	}
	if mustApply(t, d, recAt(`{"id":"a42"}`, t0.Add(2*time.Second))) || mustApply(t, d, recAt(`{"id":"new"}`, t0.Add(2*time.Second))) {
		t.Error("a repeat was kept after new entries were numbered")
	}
}

// An index bound is per block of entries, not a running maximum, so the
// latest entry of a fingerprint may be bound earlier than an older one: a
// value's live window is still found behind a colliding value written
// later with an earlier record time (partitions out of step).
func TestDedupFindsAWindowBehindALaterCollidingEntryOfEarlierTime(t *testing.T) {
	d := newDedup(t, NewMemKV(), "d", "id", time.Minute)
	a, b := collidingIDs(t, d)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) } // t0 is 5 s into a minute
	if !mustApply(t, d, recAt(`{"id":"`+a+`"}`, at(50))) {
		t.Fatal("a dropped at its first sighting")
	}
	for i := range 70 { // the rest of a's block of entries, and the start of the next, at +5 s
		mustApply(t, d, recAt(fmt.Sprintf(`{"id":"other-%d"}`, i), at(5)))
	}
	if !mustApply(t, d, recAt(`{"id":"`+b+`"}`, at(5))) {
		t.Fatal("b dropped at its first sighting")
	}
	if mustApply(t, d, recAt(`{"id":"`+a+`"}`, at(70))) {
		t.Error("a repeat of a 20 s into its window was kept: its entry is behind b's, whose bound is past")
	}
	if !mustApply(t, d, recAt(`{"id":"`+b+`"}`, at(70))) {
		t.Error("b's repeat after its TTL was dropped")
	}
}

// orderedKV is a groupedKV whose Scan reads its key groups in a given
// order (a merged state's load meets them in any).
type orderedKV struct {
	groupedKV
	order []uint16
}

func (kv *orderedKV) Scan(lo, hi []byte, fn func(k, v []byte) error) error {
	for _, kg := range kv.order {
		if m := kv.m[kg]; m != nil {
			if err := m.Scan(lo, hi, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// Two workers' state merged by a rescale numbers a bucket's entries from 0
// in each key group: the same value first seen in both, 40 minutes apart,
// is entry 0 of both. Whichever key group the load reads first, a repeat
// in the later one's window is dropped and one past the earlier one's
// window is kept: the index's slot for the shared number bounds both.
func TestDedupAfterAMergeBoundsASharedNumberByItsLaterSighting(t *testing.T) {
	for _, order := range [][]uint16{{1, 2}, {2, 1}} {
		merged := &orderedKV{groupedKV{m: map[uint16]*MemKV{}}, order}
		for kg, at := range map[uint16]time.Time{1: t0, 2: t0.Add(40 * time.Minute)} {
			worker := &groupedKV{kg: kg, m: map[uint16]*MemKV{}}
			w := newDedup(t, worker, "d", "id", time.Hour)
			mustApply(t, w, recAt(`{"id":"x"}`, at))
			flushed(t, w)
			merged.m[kg] = worker.m[kg]
		}
		d := newDedup(t, merged, "d", "id", time.Hour)
		merged.kg = 2
		if mustApply(t, d, recAt(`{"id":"x"}`, t0.Add(61*time.Minute))) {
			t.Errorf("load order %v: x in key group 2, first seen there 21 minutes before, was kept", order)
		}
		merged.kg = 1
		if !mustApply(t, d, recAt(`{"id":"x"}`, t0.Add(61*time.Minute))) {
			t.Errorf("load order %v: x in key group 1, first seen there 61 minutes before (TTL 1h), was dropped", order)
		}
	}
}

// runEntries counts the entries of the runs in m.
func runEntries(t *testing.T, m *MemKV) int {
	t.Helper()
	n := 0
	for k, v := range m.m {
		if err := eachRunEntry(v, func(int, int64, []byte) bool { n++; return true }); err != nil {
			t.Fatalf("run %q: %v", k, err)
		}
	}
	return n
}

// A bucket's open runs stay within maxOpenBytes however many key groups
// write to it (a run opens only below it, and holds at least one entry):
// past it the least recently written are written and closed, and every
// value they held is still found, before and after a restart; new values
// are numbered past the closed runs' blocks.
func TestDedupBoundsABucketsOpenRunsAndLosesNothingClosingThem(t *testing.T) {
	defer func(m int) { maxOpenBytes = m }(maxOpenBytes)
	maxOpenBytes = 60
	kv := &groupedKV{m: map[uint16]*MemKV{}}
	d := newDedup(t, kv, "d", "id", time.Hour)
	id := func(kg uint16, i int) *record.Record {
		kv.kg = kg
		return recAt(fmt.Sprintf(`{"id":"%d-%d"}`, kg, i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	const kgs, per = 10, 20
	for i := range per {
		for kg := range uint16(kgs) {
			if !mustApply(t, d, id(kg, i)) {
				t.Fatalf("%d-%d dropped at its first sighting", kg, i)
			}
			s := d.index.sets[d.bucket(t0.UnixMilli())]
			checkOpenRuns(t, s, 1+len(`"0-0`)+9)
		}
	}
	for kg := range uint16(kgs) {
		if mustApply(t, d, id(kg, 3)) || mustApply(t, d, id(kg, per-1)) {
			t.Fatalf("a repeat in key group %d was kept", kg)
		}
	}
	flushed(t, d)
	entries := 0
	for _, m := range kv.m {
		entries += runEntries(t, m)
	}
	if entries != kgs*per {
		t.Errorf("the runs hold %d entries, want %d", entries, kgs*per)
	}
	restarted := newDedup(t, kv, "d", "id", time.Hour)
	for i := range per {
		for kg := range uint16(kgs) {
			if mustApply(t, restarted, id(kg, i)) {
				t.Fatalf("after a restart, a repeat of %d-%d was kept", kg, i)
			}
		}
	}
}

// The repeats of a written run's values read the KV once for the run, not
// once each: the run is cached. A bucket expired and begun again is
// another: its runs, numbered from 0 again, are never taken for the cached
// runs of the one before.
func TestDedupReadsAWrittenRunOnceForAllItsRepeats(t *testing.T) {
	kv := &countingKV{MemKV: NewMemKV()}
	d := newDedup(t, kv, "d", "id", time.Minute)
	for i := range runLen + 1 { // a full run, written, and one entry of the next
		applied(t, d, recAt(fmt.Sprintf(`{"id":%d}`, i), t0))
	}
	for i := range runLen {
		if mustApply(t, d, recAt(fmt.Sprintf(`{"id":%d}`, i), t0.Add(time.Second))) {
			t.Fatalf("a repeat of %d was kept", i)
		}
	}
	if kv.gets != 1 {
		t.Errorf("%d KV reads for the %d repeats of a written run, want 1", kv.gets, runLen)
	}

	// Far ahead: t0's bucket expires. Records late by more than two TTLs
	// begin it again with the same values, 50 s later: a run numbered
	// from 0 again, under the key of the cached one. A repeat 20 s after
	// the new sighting (70 s after the old) must find the new one.
	applied(t, d, recAt(`{"id":"ahead"}`, t0.Add(10*time.Minute)))
	for i := range runLen + 1 {
		applied(t, d, recAt(fmt.Sprintf(`{"id":%d}`, i), t0.Add(50*time.Second)))
	}
	if mustApply(t, d, recAt(`{"id":3}`, t0.Add(70*time.Second))) {
		t.Error("a repeat 20 s after its sighting in the bucket begun again was kept: the expired bucket's cached run was read")
	}
}

// A run key cut short (the run tag and fewer than 4 bytes of number) is
// malformed state: load must report it as an unknown format, as it does for
// a numbered key cut short, not panic.
func TestDedupLoadReportsARunKeyCutShort(t *testing.T) {
	for _, tag := range []byte{numberTag, runTag} {
		kv := NewMemKV()
		d := newDedup(t, kv, "d", "id", time.Hour)
		span := widthSpan([]byte("transform/dedup/d/"), time.Hour.Milliseconds())
		k := append(span.bucketPrefix(nil, d.bucket(t0.UnixMilli())), tag, 0, 0) // 2 bytes of number, not 4
		v := appendRunEntry([]byte{runFormat}, t0.UnixMilli(), []byte(`"a`))
		if tag == numberTag {
			v = append(binary.BigEndian.AppendUint64([]byte{numberFormat}, uint64(t0.UnixMilli())), `"a`...)
		}
		kv.Set(k, v)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("tag %#x: load panicked on a key cut short: %v", tag, p)
				}
			}()
			if _, err := d.Apply(rec(`{"id":"a"}`)); err == nil {
				t.Errorf("tag %#x: a key cut short was read without error", tag)
			}
		}()
	}
}

// A worker of more key groups than maxOpenBytes holds runs of
// (max_parallelism in the thousands over a few workers): runs are closed
// after an entry or two, and a closed run is taken up again at its key
// group's next write, so the bucket numbers its values up to indexCap.
// When the rest of a closed run's block was thrown away instead, the
// numbers (numMask/runLen blocks) ran out after ~70-150K values, far below
// indexCap, and every later value was written by value. Found by a review
// helper.
func TestDedupNumbersABucketsValuesUpToIndexCapWithManyKeyGroups(t *testing.T) {
	defer func(m, c int) { maxOpenBytes, indexCap = m, c }(maxOpenBytes, indexCap)
	maxOpenBytes, indexCap = 64*17, 200_000
	const kgs = 1024
	kv := &groupedKV{m: map[uint16]*MemKV{}}
	d := newDedup(t, kv, "d", "id", time.Hour)
	id := func(i int) *record.Record {
		kv.kg = uint16(i * 7919 % kgs)
		return recAt(fmt.Sprintf(`{"id":%d}`, i), t0)
	}
	for i := range indexCap {
		applied(t, d, id(i))
		s := d.index.sets[d.bucket(t0.UnixMilli())]
		if s.byValue {
			t.Fatalf("after %d values: by value (next number %d of %d)", i+1, s.next, numMask)
		}
		checkOpenRuns(t, s, 1+9+1)
	}
	// Each key group holds at most one block not full (its open or closed
	// run): a closed run taken up again in another key group's KV is not
	// found, and its block's rest is thrown away.
	if s := d.index.sets[d.bucket(t0.UnixMilli())]; int(s.next) > indexCap+kgs*runLen {
		t.Errorf("%d values in %d key groups took numbers up to %d: blocks were thrown away", indexCap, kgs, s.next)
	}
	flushed(t, d)
	restarted := newDedup(t, kv, "d", "id", time.Hour)
	for i := 0; i < indexCap; i += 101 {
		if mustApply(t, restarted, id(i)) {
			t.Fatalf("after a restart, the repeat of %d was kept", i)
		}
	}
}

// checkOpenRuns checks s's count of its open runs' bytes, and that it has
// no more open runs than maxOpenBytes allows when each holds at least
// least bytes (a run opens only while the bytes are below maxOpenBytes).
func checkOpenRuns(t *testing.T, s *bucketIndex, least int) {
	t.Helper()
	n := 0
	for _, r := range s.runs {
		n += len(r.buf)
	}
	if n != s.openBytes {
		t.Fatalf("the open runs hold %d bytes, counted %d", n, s.openBytes)
	}
	if most := maxOpenBytes/least + 1; len(s.runs) > most {
		t.Fatalf("%d open runs in a bucket, want at most %d", len(s.runs), most)
	}
}
