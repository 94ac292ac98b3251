package transform

import (
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
	span := plainSpan(before.ns)
	plain := func() int { return kv.countSpan(span.lo, span.hi) }
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
	run := func(ttl time.Duration) *Dedup { return newDedup(t, kv, "d", "id", ttl) }
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
