package transform

import (
	"fmt"
	"testing"
	"time"
)

// newDedupAt is newDedup with the host's clock stopped at now.
func newDedupAt(t *testing.T, kv KV, ttl time.Duration, now time.Time) *Dedup {
	t.Helper()
	d := newDedup(t, kv, "d", "id", ttl)
	d.clock = func() int64 { return now.UnixMilli() }
	return d
}

// entriesIn counts the KV's entries in d's bucket of record time at.
func entriesIn(t *testing.T, d *Dedup, at time.Time) int {
	t.Helper()
	b := d.bucket(at.UnixMilli())
	n := 0
	if err := d.kv.Scan(d.bucketPrefix(nil, b), d.bucketPrefix(nil, b+1), func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A record stamped years past the host's clock (a producer's bug) does not
// make the dedup forget the values of the present, whatever the TTL: their
// repeats within the TTL are still dropped, and its own repeat too. Its
// entry, in a bucket ahead, goes when a fifth bucket ahead is needed, the
// least recently used. Before, its time became the newest seen and expired
// every bucket below its own. (A lead of a minute failed with the 10 s
// TTL: found by a review.)
func TestDedupRecordStampedFarPastTheClockKeepsThePresentsMemory(t *testing.T) {
	for _, ttl := range []time.Duration{time.Second, 10 * time.Second, time.Minute, time.Hour} {
		now := t0
		d := newDedupAt(t, NewMemKV(), ttl, now)
		for i := range 10 {
			applied(t, d, recAt(fmt.Sprintf(`{"id":"v%d"}`, i), now.Add(-ttl/2)))
		}
		future := now.AddDate(10, 0, 0)
		applied(t, d, recAt(`{"id":"future"}`, future))
		for i := range 10 {
			if mustApply(t, d, recAt(fmt.Sprintf(`{"id":"v%d"}`, i), now)) {
				t.Errorf("ttl %v: v%d kept %v after its first sighting, after a record stamped 10 years ahead", ttl, i, ttl/2)
			}
		}
		if mustApply(t, d, recAt(`{"id":"future"}`, future.Add(ttl/2))) {
			t.Errorf("ttl %v: the record stamped 10 years ahead: its repeat %v later was kept", ttl, ttl/2)
		}
		if n := entriesIn(t, flushed(t, d), future); n == 0 {
			t.Fatalf("ttl %v: the record stamped 10 years ahead left no entry in its bucket", ttl)
		}
		for i := range maxAhead { // records far ahead in other buckets, then the present again
			applied(t, d, recAt(fmt.Sprintf(`{"id":"w%d"}`, i), now.AddDate(1+i, 0, 0)))
			applied(t, d, recAt(fmt.Sprintf(`{"id":"x%d"}`, i), now))
		}
		if n := entriesIn(t, flushed(t, d), future); n != 0 {
			t.Errorf("ttl %v: the bucket of the record stamped 10 years ahead still holds %d entries after %d buckets ahead more", ttl, n, maxAhead)
		}
		if _, ok := d.index.sets[d.bucket(future.UnixMilli())]; ok {
			t.Errorf("ttl %v: the index still holds the bucket of the record stamped 10 years ahead", ttl)
		}
		if got := len(d.index.sets); got > 2+maxAhead {
			t.Errorf("ttl %v: the index holds %d buckets, want at most %d (the present's, and %d ahead)", ttl, got, 2+maxAhead, maxAhead)
		}
	}
}

// A producer a few seconds fast beside partitions on time, with a TTL
// shorter than its lead (1 s): the newest time seen moves at most a TTL
// past the clock, so the on-time partitions' repeats within the TTL are
// all dropped. (A lead of a minute made each bucket the fast producer
// entered expire the on-time partitions': found by a review.)
func TestDedupProducerSecondsFastKeepsTheOnTimePartitionsMemory(t *testing.T) {
	clock := t0
	d := newDedupAt(t, NewMemKV(), time.Second, clock)
	kept := 0
	const n = 200
	for i := range n { // 100 ms of the host's clock each
		at := clock.Add(time.Duration(i) * 100 * time.Millisecond)
		d.clock = func() int64 { return at.UnixMilli() }
		applied(t, d, recAt(fmt.Sprintf(`{"id":"fast%d"}`, i), at.Add(3*time.Second)))
		applied(t, d, recAt(fmt.Sprintf(`{"id":"p%d"}`, i), at))
		if i >= 5 && mustApply(t, d, recAt(fmt.Sprintf(`{"id":"p%d"}`, i-5), at)) { // a repeat 500 ms later
			kept++
		}
		if i >= 2 && mustApply(t, d, recAt(fmt.Sprintf(`{"id":"fast%d"}`, i-2), at.Add(3*time.Second))) { // 200 ms later
			t.Errorf("the fast producer's fast%d kept 200 ms after its first sighting (TTL 1s)", i-2)
		}
	}
	if kept > 0 {
		t.Errorf("%d of %d repeats 500 ms after their first sighting (TTL 1s) kept beside a producer 3 s fast", kept, n-5)
	}
}

// After a restart on state that holds an entry stamped far past the clock,
// the present's buckets still expire as record time moves on: the entry
// does not become the newest time seen at the load.
func TestDedupLoadOfAnEntryFarPastTheClockStillExpiresThePresent(t *testing.T) {
	now := t0
	kv := NewMemKV()
	d := newDedupAt(t, kv, time.Minute, now)
	applied(t, d, recAt(`{"id":"a"}`, now))
	applied(t, d, recAt(`{"id":"future"}`, now.AddDate(10, 0, 0)))
	flushed(t, d)

	restarted := newDedupAt(t, kv, time.Minute, now)
	if mustApply(t, restarted, recAt(`{"id":"a"}`, now.Add(time.Second))) {
		t.Error("after a restart, a repeat 1 s after its first sighting was kept")
	}
	most := 0
	for i := range 600 { // ten TTLs of the present, a new value a second
		at := now.Add(time.Duration(i) * time.Second)
		restarted.clock = func() int64 { return at.UnixMilli() }
		applied(t, restarted, recAt(fmt.Sprintf(`{"id":"v%d"}`, i), at))
		most = max(most, len(restarted.index.sets))
	}
	// Three buckets a lookup may read, a fourth the newest just entered,
	// and the one ahead.
	if most > 5 {
		t.Errorf("the index held up to %d buckets over ten TTLs, want at most 5: the present's buckets did not expire", most)
	}
	if entriesIn(t, flushed(t, restarted), now) != 0 {
		t.Error("the first bucket still holds entries ten TTLs later")
	}
}

// Records stamped a little ahead of the clock (a producer's clock a few
// seconds fast) move the expiry as usual once the clock catches up: the
// clock is read again when a record passes the bound it gave.
func TestDedupClockIsReadAgainAsRecordsPassItsBound(t *testing.T) {
	now := t0
	d := newDedupAt(t, NewMemKV(), time.Minute, now)
	applied(t, d, recAt(`{"id":"a"}`, now))
	later := now.Add(5 * time.Minute)
	d.clock = func() int64 { return later.UnixMilli() }
	applied(t, d, recAt(`{"id":"b"}`, later.Add(5*time.Second)))
	if got, want := d.maxSeen, later.Add(5*time.Second).UnixMilli(); got != want {
		t.Errorf("newest record time seen = %d, want %d (the record's, 5 s ahead of the clock)", got, want)
	}
	if _, ok := d.index.sets[d.bucket(now.UnixMilli())]; ok {
		t.Error("the bucket of five TTLs ago was not expired")
	}
	applied(t, d, recAt(`{"id":"c"}`, later.Add(2*time.Minute)))
	if got, want := d.maxSeen, later.Add(time.Minute).UnixMilli(); got != want {
		t.Errorf("newest record time seen = %d, want %d (the clock plus the TTL)", got, want)
	}
}

// A repeat stamped before its first sighting is dropped (as any record
// older than a window's first sighting is) when both are stamped more than
// the lead past the clock, the first sighting in the bucket after the
// repeat's own: the lookup reads the bucket after whenever the index holds
// one, not only once the newest time seen (clamped) reached it. So after a
// restart. (Found by a review.)
func TestDedupRepeatBeforeAFirstSightingStampedAheadIsDropped(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	first, repeat := clock.Add(10*time.Minute+30*time.Second), clock.Add(9*time.Minute+45*time.Second) // buckets 03:10, 03:09
	d := newDedupAt(t, NewMemKV(), time.Minute, clock)
	applied(t, d, recAt(`{"id":"x"}`, first))
	if mustApply(t, d, recAt(`{"id":"x"}`, repeat)) {
		t.Error("a repeat 45 s before its first sighting (TTL 1m), both stamped 10 min past the clock, was kept")
	}

	kv := NewMemKV()
	d = newDedupAt(t, kv, time.Minute, clock)
	applied(t, d, recAt(`{"id":"y"}`, first))
	flushed(t, d)
	r := newDedupAt(t, kv, time.Minute, clock)
	if mustApply(t, r, recAt(`{"id":"y"}`, repeat)) {
		t.Error("after a restart, a repeat 45 s before its first sighting (TTL 1m), both stamped 10 min past the clock, was kept")
	}
}

// A bucket ahead does not go stale: a producer more than a TTL ahead of
// the clock (TTL 1s, 3 s fast) may send few records among many on time,
// which never come to its bucket. (Found by a review: its bucket went
// stale after 65,536 records of the others.)
func TestDedupBucketOfAProducerSecondsFastIsNotStale(t *testing.T) {
	defer func(n uint64) { staleEvery = n }(staleEvery)
	staleEvery = 64
	clock := t0
	d := newDedupAt(t, NewMemKV(), time.Second, clock)
	applied(t, d, recAt(`{"id":"x"}`, clock.Add(3*time.Second)))
	for i := range 2 * staleEvery { // the other partitions, on time
		applied(t, d, recAt(fmt.Sprintf(`{"id":"p%d"}`, i), clock.Add(time.Duration(i)*time.Millisecond)))
	}
	if mustApply(t, d, recAt(`{"id":"x"}`, clock.Add(3*time.Second+200*time.Millisecond))) {
		t.Error("the fast producer's repeat 200 ms after its first sighting (TTL 1s) was kept: its bucket was dropped as stale")
	}
}

// A producer steadily ahead of the clock by far more than the TTL (1 s and
// 2 min fast, TTL 1ms) keeps at most maxAhead buckets ahead, its repeats
// within the TTL dropped all along. (Found by a review: it kept a bucket a
// TTL until the clock caught up.)
func TestDedupProducerSteadilyAheadKeepsAFewBuckets(t *testing.T) {
	for _, skew := range []time.Duration{time.Second, 2 * time.Minute} {
		d := newDedupAt(t, NewMemKV(), time.Millisecond, t0)
		most := 0
		for i := range 3000 { // a record a ms of the host's clock
			at := t0.Add(time.Duration(i) * time.Millisecond)
			d.clock = func() int64 { return at.UnixMilli() }
			v := fmt.Sprintf(`{"id":"v%d"}`, i)
			applied(t, d, recAt(v, at.Add(skew)))
			if mustApply(t, d, recAt(v, at.Add(skew))) {
				t.Fatalf("%v fast: a repeat in the same ms (TTL 1ms) was kept", skew)
			}
			most = max(most, len(d.index.sets))
		}
		if most > maxAhead+1 {
			t.Errorf("%v fast: the index held up to %d buckets (TTL 1ms), want at most %d", skew, most, maxAhead+1)
		}
	}
}
