package transform

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// A restart with another ttl keeps the dedup's memory: a repeat within the
// new TTL of a value first seen under the old one is dropped, a value past
// the new TTL kept, and new values are deduped as before. With the bucket
// numbers of the old width read as the new width's, the repeat was kept.
func TestDedupKeepsItsMemoryWhenItsTTLChanges(t *testing.T) {
	for _, c := range []struct{ from, to time.Duration }{
		{10 * time.Minute, 20 * time.Minute},
		{20 * time.Minute, 10 * time.Minute},
		{10 * time.Minute, 11 * time.Minute},
		{10 * time.Minute, 10 * time.Minute},
		{time.Hour, time.Second},
	} {
		t.Run(fmt.Sprintf("%v-%v", c.from, c.to), func(t *testing.T) {
			kv := NewMemKV()
			before := newDedup(t, kv, "d", "id", c.from)
			for i := range 50 {
				if !mustApply(t, before, recAt(fmt.Sprintf(`{"id":"x%d"}`, i), t0.Add(time.Duration(i)*time.Millisecond))) {
					t.Fatalf("x%d was dropped the first time", i)
				}
			}
			flushed(t, before)                        // the checkpoint
			after := newDedup(t, kv, "d", "id", c.to) // a restart on the same state
			within := min(c.from, c.to) / 2
			for i := range 50 {
				if mustApply(t, after, recAt(fmt.Sprintf(`{"id":"x%d"}`, i), t0.Add(within))) {
					t.Fatalf("x%d, a repeat %v after it was first seen, was kept after the ttl went from %v to %v", i, within, c.from, c.to)
				}
			}
			if !mustApply(t, after, recAt(`{"id":"new"}`, t0.Add(within))) || mustApply(t, after, recAt(`{"id":"new"}`, t0.Add(within+time.Millisecond))) {
				t.Error("a new value was not deduped under the new ttl")
			}
			past := t0.Add(c.to + time.Second)
			if !mustApply(t, after, recAt(`{"id":"x7"}`, past)) {
				t.Errorf("x7, %v after it was first seen, was dropped under a ttl of %v", c.to+time.Second, c.to)
			}
		})
	}
}

// The entries of the old width go whole once no record can find them
// within the new TTL: the state does not keep them (nor their tables) for
// good, as it did when their bucket numbers were above any the new width
// reached.
func TestDedupDropsTheEntriesOfAnEarlierTTL(t *testing.T) {
	kv := NewMemKV()
	before := newDedup(t, kv, "d", "id", 10*time.Minute)
	for i := range 100 {
		mustApply(t, before, recAt(fmt.Sprintf(`{"id":%d}`, i), t0.Add(time.Duration(i)*time.Second)))
	}
	flushed(t, before)
	span := widthSpan(before.ns, before.ttl)
	plain := func() int { return kv.countEntries(t, span.lo, span.hi) }
	if n := plain(); n != 100 {
		t.Fatalf("%d entries in the plain layout, want 100", n)
	}
	after := newDedup(t, kv, "d", "id", 20*time.Minute)
	mustApply(t, after, recAt(`{"id":"a"}`, t0.Add(10*time.Minute)))
	if len(after.old) != 1 || plain() != 100 {
		t.Fatalf("after the restart: %d earlier generations, %d entries of the old width; want 1 and 100", len(after.old), plain())
	}
	// Two new TTLs after the newest old entry (t0+99s), the old width goes.
	mustApply(t, after, recAt(`{"id":"b"}`, t0.Add(99*time.Second+40*time.Minute)))
	if len(after.old) != 0 || plain() != 0 {
		t.Errorf("40 minutes on: %d earlier generations, %d entries of the old width; want none", len(after.old), plain())
	}
	if !mustApply(t, after, recAt(`{"id":"c"}`, t0.Add(41*time.Minute))) || mustApply(t, after, recAt(`{"id":"c"}`, t0.Add(42*time.Minute))) {
		t.Error("the current width's dedup broke when the old one went")
	}
}

// A ttl changed and changed back: each width's entries are found, and so
// are those of a restart under the same changed ttl.
func TestDedupFindsEveryWidthsEntriesAcrossChanges(t *testing.T) {
	kv := NewMemKV()
	var last *Dedup
	run := func(ttl time.Duration) *Dedup { // a restart after last's checkpoint
		if last != nil {
			flushed(t, last)
		}
		last = newDedup(t, kv, "d", "id", ttl)
		return last
	}
	first := run(10 * time.Minute)
	mustApply(t, first, recAt(`{"id":"a"}`, t0))
	second := run(30 * time.Minute)
	mustApply(t, second, recAt(`{"id":"b"}`, t0.Add(time.Minute)))
	again := run(30 * time.Minute)
	mustApply(t, again, recAt(`{"id":"c"}`, t0.Add(2*time.Minute)))
	back := run(10 * time.Minute)
	for _, id := range []string{"a", "b", "c"} {
		if mustApply(t, back, recAt(`{"id":"`+id+`"}`, t0.Add(3*time.Minute))) {
			t.Errorf("%s, first seen 1-3 minutes before under ttls of 10 and 30 minutes, was kept", id)
		}
	}
	if len(back.old) != 1 {
		t.Errorf("%d earlier generations after the ttl came back, want 1 (30 minutes')", len(back.old))
	}
}

// countSpan is the number of keys in [lo, hi).
func (kv *MemKV) countSpan(lo, hi []byte) int {
	n := 0
	for k := range kv.m {
		if k >= string(lo) && k < string(hi) {
			n++
		}
	}
	return n
}

// countEntries is the number of a dedup's entries in [lo, hi): a run's
// each, any other key one.
func (kv *MemKV) countEntries(t *testing.T, lo, hi []byte) int {
	t.Helper()
	n := 0
	for k, v := range kv.m {
		if k < string(lo) || k >= string(hi) {
			continue
		}
		if len(v) == 0 || v[0] != runFormat {
			n++
			continue
		}
		if err := eachRunEntry(v, func(int, int64, []byte) bool { n++; return true }); err != nil {
			t.Fatalf("run %q: %v", k, err)
		}
	}
	return n
}

// Two workers that changed ttl at different points of their state (one had
// written under the old ttl, the other nothing yet), merged by a rescale:
// the merged state starts and finds every value. (With the old width
// recorded per key group beside keys without it, the two recorded widths
// disagreed and the job could not start again.)
func TestDedupMergesWorkersThatChangedTTLApart(t *testing.T) {
	w1 := &groupedKV{kg: 1, m: map[uint16]*MemKV{}}
	flushed(t, applied(t, newDedup(t, w1, "d", "id", 10*time.Minute), recAt(`{"id":"a"}`, t0)))
	w2 := &groupedKV{kg: 2, m: map[uint16]*MemKV{}}
	flushed(t, applied(t, newDedup(t, w1, "d", "id", 20*time.Minute), recAt(`{"id":"b"}`, t0.Add(time.Second))))
	flushed(t, applied(t, newDedup(t, w2, "d", "id", 20*time.Minute), recAt(`{"id":"c"}`, t0.Add(time.Second))))
	merged := &groupedKV{m: map[uint16]*MemKV{1: w1.m[1], 2: w2.m[2]}}
	d := newDedup(t, merged, "d", "id", 20*time.Minute)
	for kg, id := range map[uint16]string{1: "a", 1 + 16: "b", 2: "c"} {
		merged.kg = kg % 16
		keep, err := d.Apply(recAt(`{"id":"`+id+`"}`, t0.Add(time.Minute)))
		if err != nil {
			t.Fatalf("%s after the merge: %v", id, err)
		}
		if keep {
			t.Errorf("%s, seen a minute before, was kept after the merge", id)
		}
	}
}

// A state of an earlier version (keys without the width) is read as of the
// current ttl: its repeats are dropped, and it goes whole two TTLs after
// its newest entry.
func TestDedupReadsTheNumberedEntriesOfTheVersionBeforeWidths(t *testing.T) {
	kv := NewMemKV()
	d := newDedup(t, kv, "d", "id", time.Minute)
	prev := plainSpan(d.ns)
	for i, id := range []string{"a", "b", "c"} {
		first := t0.Add(time.Duration(i) * time.Second).UnixMilli()
		key := binary.BigEndian.AppendUint32(append(prev.bucketPrefix(nil, bucketOf(first, d.ttl)), numberTag), uint32(i))
		val := append(binary.BigEndian.AppendUint64([]byte{numberFormat}, uint64(first)), `"`+id...)
		if err := kv.Set(key, val); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if mustApply(t, d, recAt(`{"id":"`+id+`"}`, t0.Add(30*time.Second))) {
			t.Errorf("%s, written by the earlier version 30 s before, was kept", id)
		}
	}
	if !mustApply(t, d, recAt(`{"id":"a"}`, t0.Add(61*time.Second))) {
		t.Error("a, past its TTL, was dropped")
	}
	mustApply(t, d, recAt(`{"id":"z"}`, t0.Add(3*time.Minute)))
	if n := kv.countSpan(prev.lo, prev.hi); n != 0 || len(d.old) != 0 {
		t.Errorf("two TTLs after its newest entry, %d entries of the earlier version and %d earlier generations are left", n, len(d.old))
	}
}

// An earlier generation's buckets go one by one as the newest record time
// moves two current TTLs past their end, not all at its end.
func TestDedupPrunesAnEarlierTTLsBucketsAsTimeGoesOn(t *testing.T) {
	kv := NewMemKV()
	before := newDedup(t, kv, "d", "id", time.Second)
	for i := range 100 { // 100 buckets of 1 s (three live at a time: the others expire)
		mustApply(t, before, recAt(fmt.Sprintf(`{"id":%d}`, i), t0.Add(time.Duration(i)*time.Second)))
	}
	flushed(t, before)
	after := newDedup(t, kv, "d", "id", 5*time.Second)
	mustApply(t, after, recAt(`{"id":"x"}`, t0.Add(100*time.Second)))
	if len(after.old) != 1 || len(after.old[0].sets) != 3 {
		t.Fatalf("%d earlier generations (want 1) after a run that kept 3 buckets", len(after.old))
	}
	// The newest old entry is at t0+99 s, in the bucket ending at t0+100 s.
	// At t0+108 s (a new 5 s bucket), the bucket that ended at t0+98 s is
	// two TTLs behind; the two after it are not.
	mustApply(t, after, recAt(`{"id":"y"}`, t0.Add(108*time.Second)))
	if len(after.old) != 1 || len(after.old[0].sets) != 2 {
		t.Fatalf("at t0+108 s the earlier generation has %v buckets, want 2 of its 3", len(after.old[0].sets))
	}
	if mustApply(t, after, recAt(`{"id":99}`, t0.Add(103*time.Second))) {
		t.Error("99, first seen at t0+99 s, was kept at t0+103 s")
	}
	mustApply(t, after, recAt(`{"id":"z"}`, t0.Add(110*time.Second)))
	if len(after.old) != 0 {
		t.Errorf("at t0+110 s, two TTLs past its newest entry, %d earlier generations are left", len(after.old))
	}
}

// An earlier generation whose newest entry and a record are near the two
// ends of the clamped times (2^63 ms apart) is looked up in the buckets it
// has: its range of bucket numbers, 2^63 wide, wrapped, and the lookup
// walked it (the worker hung). As the width's generation of a ttl changed
// from 1 ms, and as the previous version's state of a 1 ms ttl.
func TestDedupLooksUpAnEarlierGenerationAcrossAllTime(t *testing.T) {
	kv := NewMemKV()
	d1 := newDedup(t, kv, "d", "id", time.Millisecond)
	mustApply(t, d1, recAt(`{"id":"x"}`, time.UnixMilli(1<<62)))
	flushed(t, d1)
	applyFarBefore(t, newDedup(t, kv, "d", "id", time.Minute), "an earlier generation's")
}

func TestDedupLooksUpThePreviousVersionsStateAcrossAllTime(t *testing.T) {
	kv := NewMemKV()
	d1 := newDedup(t, kv, "d", "id", time.Millisecond)
	flushed(t, applied(t, d1, recAt(`{"id":"x"}`, time.UnixMilli(1<<62))))
	span := widthSpan(d1.ns, 1)
	for k, v := range kv.m { // as the version before wrote it
		delete(kv.m, k)
		for nk, nv := range previousVersionEntries("transform/dedup/d/\x00"+k[len(span.head):], v, len("transform/dedup/d/\x00")+8) {
			kv.m[nk] = nv
		}
	}
	applyFarBefore(t, newDedup(t, kv, "d", "id", time.Millisecond), "the previous version's")
}

// applyFarBefore applies x at -2^62 ms to d, whose state holds x at +2^62
// (in its filter: its buckets are read), and fails if that does not end
// within 5 s.
func applyFarBefore(t *testing.T, d *Dedup, whose string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := d.Apply(recAt(`{"id":"x"}`, time.UnixMilli(-1<<62)))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the lookup of a record 2^63 ms before %s newest entry has not ended in 5 s", whose)
	}
}
