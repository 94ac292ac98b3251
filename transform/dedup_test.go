package transform

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

func newDedup(t *testing.T, kv KV, name, key string, ttl time.Duration) *Dedup {
	t.Helper()
	d, err := NewDedup(DedupConfig{Name: name, Key: key, TTL: ttl}, kv)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDedupDropsRepeatsWithinTTLOnRecordTime(t *testing.T) {
	d := newDedup(t, NewMemKV(), "d", "id", time.Minute)
	steps := []struct {
		value string
		at    time.Duration // after t0
		keep  bool
	}{
		{`{"id":"a"}`, 0, true},
		{`{"id":"a"}`, 59 * time.Second, false},       // within TTL
		{`{"id":"b"}`, 59 * time.Second, true},        // other value
		{`{"id":"a","x":1}`, 60 * time.Second, true},  // TTL over: kept, new window
		{`{"id":"a"}`, 119 * time.Second, false},      // within the new window
		{`{"id":"a"}`, 30 * time.Second, false},       // older than first seen: a duplicate
		{`{"id":"\u0062"}`, 100 * time.Second, false}, // same decoded string as "b"
		{`{"id":1}`, 0, true},                         // number 1 is not string "1"
		{`{"id":"1"}`, 0, true},                       //
		{`{"id":1.0}`, 0, true},                       // numbers compare by text
		{`{"id":{"k":[1]}}`, 0, true},                 // objects by bytes
		{`{"id":{"k":[1]}}`, time.Second, false},      //
		{`{"id":true}`, 0, true},                      //
		{`{"id":true}`, 0, false},                     //
		{`{"other":1}`, 0, true},                      // no key: passes
		{`{"id":null}`, 0, true},                      // null key: passes
		{`{"id":null}`, 0, true},                      //
	}
	for i, s := range steps {
		if got := mustApply(t, d, recAt(s.value, t0.Add(s.at))); got != s.keep {
			t.Errorf("step %d %s at +%v: keep = %v, want %v", i, s.value, s.at, got, s.keep)
		}
	}
	if got := d.KeyMissing(); got != 3 {
		t.Errorf("KeyMissing = %d, want 3", got)
	}
}

func TestDedupStateSurvivesRestartOnTheSameKV(t *testing.T) {
	kv := NewMemKV()
	first := newDedup(t, kv, "d", "customer.id", time.Hour)
	if !mustApply(t, first, rec(`{"customer":{"id":7}}`)) {
		t.Fatal("first sighting dropped")
	}
	flushed(t, first) // the checkpoint
	// A restart: a new instance on the restored KV, no memory of its own.
	second := newDedup(t, kv, "d", "customer.id", time.Hour)
	if mustApply(t, second, recAt(`{"customer":{"id":7}}`, t0.Add(time.Minute))) {
		t.Error("a duplicate was kept after restart")
	}
	if !mustApply(t, second, recAt(`{"customer":{"id":7}}`, t0.Add(time.Hour))) {
		t.Error("a value past its TTL was dropped after restart")
	}
}

func TestDedupsWithDifferentNamesShareAStoreIndependently(t *testing.T) {
	kv := NewMemKV()
	a := newDedup(t, kv, "a", "id", time.Hour)
	b := newDedup(t, kv, "b", "id", time.Hour)
	if !mustApply(t, a, rec(`{"id":1}`)) || !mustApply(t, b, rec(`{"id":1}`)) {
		t.Error("one dedup's memory leaked into the other's")
	}
	if mustApply(t, a, rec(`{"id":1}`)) || mustApply(t, b, rec(`{"id":1}`)) {
		t.Error("a repeat was kept")
	}
	if flushed(t, a); kv.Len() != 1 {
		t.Errorf("kv holds %d entries after a's flush, want 1 (b's run is in memory)", kv.Len())
	}
	if flushed(t, b); kv.Len() != 2 {
		t.Errorf("kv holds %d entries, want 2", kv.Len())
	}
}

func TestDedupStateErrorsAreClassed(t *testing.T) {
	written := NewMemKV()
	flushed(t, applied(t, newDedup(t, written, "d", "id", time.Hour), rec(`{"id":1}`)))
	d := newDedup(t, getFailKV{written}, "d", "id", time.Hour)
	if _, err := d.Apply(rec(`{"id":1}`)); !errors.Is(err, ErrState) || !errors.Is(err, errDisk) {
		t.Errorf("Get failure: err = %v, want ErrState wrapping the cause", err)
	}
	kv := NewMemKV()
	d = newDedup(t, setFailKV{kv}, "d", "id", time.Hour)
	if _, err := d.Apply(rec(`{"id":1}`)); err != nil {
		t.Fatalf("a first sighting, held in its run: %v", err)
	}
	if err := d.Flush(); !errors.Is(err, ErrState) || !errors.Is(err, errDisk) {
		t.Errorf("Set failure at Flush: err = %v, want ErrState wrapping the cause", err)
	}
	var err error
	for i := 2; i <= runLen && err == nil; i++ { // the run fills: written at once
		_, err = d.Apply(rec(fmt.Sprintf(`{"id":%d}`, i)))
	}
	if !errors.Is(err, ErrState) || !errors.Is(err, errDisk) {
		t.Errorf("Set failure of a full run: err = %v, want ErrState wrapping the cause", err)
	}
	kv.Set([]byte("transform/dedup/d/1"), []byte("garbage"))
	d = newDedup(t, kv, "d", "id", time.Hour)
	if _, err := d.Apply(rec(`{"id":1}`)); !errors.Is(err, ErrState) {
		t.Errorf("corrupt entry: err = %v, want ErrState", err)
	}
	if _, err := d.Apply(rec(`[1]`)); !errors.Is(err, ErrDecode) {
		t.Errorf("bad value: err = %v, want ErrDecode", err)
	}
}

type setFailKV struct{ *MemKV }

type getFailKV struct{ *MemKV }

func (getFailKV) Get([]byte) ([]byte, bool, error) { return nil, false, errDisk }

func (setFailKV) Set([]byte, []byte) error { return errDisk }

func TestDedupConfigErrorsNameTheKey(t *testing.T) {
	kv := NewMemKV()
	cases := []struct {
		cfg  DedupConfig
		kv   KV
		want string
	}{
		{DedupConfig{Key: "id", TTL: time.Hour}, kv, "dedup.name: is required"},
		{DedupConfig{Name: "a/b", Key: "id", TTL: time.Hour}, kv, `dedup.name: "a/b": use letters`},
		{DedupConfig{Name: "d", TTL: time.Hour}, kv, "dedup.key: is required"},
		{DedupConfig{Name: "d", Key: ".id", TTL: time.Hour}, kv, `dedup.key: ".id" has an empty path segment`},
		{DedupConfig{Name: "d", Key: "id"}, kv, "dedup.ttl: 0s: must be at least 1ms"},
		{DedupConfig{Name: "d", Key: "id", TTL: time.Hour}, nil, "dedup: no state store"},
	}
	for _, tc := range cases {
		_, err := NewDedup(tc.cfg, tc.kv)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewDedup(%+v) = %v, want ErrInvalidConfig containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestMemKVDelete(t *testing.T) {
	kv := NewMemKV()
	kv.Set([]byte("k"), []byte("v"))
	kv.Set([]byte("k"), []byte("w"))
	if v, ok, _ := kv.Get([]byte("k")); !ok || string(v) != "w" {
		t.Fatalf("Get = %q %v", v, ok)
	}
	kv.Set([]byte("k"), []byte("longer"))
	kv.Delete([]byte("k"))
	if _, ok, _ := kv.Get([]byte("k")); ok || kv.Len() != 0 {
		t.Error("Delete left the key")
	}
}

// count is how many keys of kv begin with prefix and end with suffix.
func (kv *MemKV) count(prefix, suffix string) int {
	n := 0
	for k := range kv.m {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) {
			n++
		}
	}
	return n
}

// Values that never repeat do not pile up: a dedup keeps the first
// sightings of at most about three TTLs (its time buckets), while every
// repeat within the TTL is still dropped.
func TestDedupStateStaysBoundedWhenValuesNeverRepeat(t *testing.T) {
	kv := NewMemKV()
	d := newDedup(t, kv, "d", "id", time.Minute)
	most := 0
	for i := range 3600 { // an hour, a new id every second
		at := t0.Add(time.Duration(i) * time.Second)
		if !mustApply(t, d, recAt(fmt.Sprintf(`{"id":%d}`, i), at)) {
			t.Fatalf("id %d dropped at its first sighting", i)
		}
		if i >= 59 && mustApply(t, d, recAt(fmt.Sprintf(`{"id":%d}`, i-59), at)) {
			t.Fatalf("id %d kept 59 s after its first sighting (TTL 1m)", i-59)
		}
		most = max(most, kv.Len())
	}
	if most > 3*60+1 {
		t.Errorf("state held up to %d entries for 60 ids a TTL, want at most %d", most, 3*60+1)
	}
}

// Records far behind the newest one (partitions lagging in a backlog, at
// the end of which the newest never moves again) do not pile up either: a
// bucket they wrote into again, below the expired ones, goes once no record
// came to it for staleEvery records. Their repeats within the TTL are still
// dropped, each lagging stream's among its own.
func TestDedupStateStaysBoundedBehindARecordFarAhead(t *testing.T) {
	defer func(n uint64) { staleEvery = n }(staleEvery)
	staleEvery = 128 // a TTL of the records below
	kv := NewMemKV()
	d := newDedup(t, kv, "d", "id", time.Minute)
	mustApply(t, d, recAt(`{"id":"ahead"}`, t0.Add(3*time.Hour)))
	most := 0
	for i := range 3600 { // two streams an hour apart, a new id a second each
		for _, lag := range []time.Duration{0, time.Hour} {
			at := t0.Add(lag + time.Duration(i)*time.Second)
			id := fmt.Sprintf(`{"id":"%v-%d"}`, lag, i)
			if !mustApply(t, d, recAt(id, at)) {
				t.Fatalf("%s dropped at its first sighting", id)
			}
			if i >= 59 {
				id := fmt.Sprintf(`{"id":"%v-%d"}`, lag, i-59)
				if mustApply(t, d, recAt(id, at)) {
					t.Fatalf("%s kept 59 s after its first sighting (TTL 1m)", id)
				}
			}
		}
		most = max(most, kv.Len())
	}
	// Each stream: 3 buckets a lookup may read, and 2 more until they are
	// found stale (128 records: a minute of the two streams' records).
	if most > 2*5*60+1 {
		t.Errorf("state held up to %d entries for two streams of 60 ids a TTL, want at most %d", most, 2*5*60+1)
	}
}

// staleBucketsSetup is a dedup with a TTL of a minute on a MemKV, the
// start of the minute of t0 (base) and its bucket (b0), the count of the
// KV's entries in bucket b (held) and a barrier (flush).
func staleBucketsSetup(t *testing.T) (kv *MemKV, d *Dedup, base time.Time, b0 int64, held func(b int64) int, flush func()) {
	kv = NewMemKV()
	d = newDedup(t, kv, "d", "id", time.Minute)
	base = t0.Truncate(time.Minute)
	b0 = d.bucket(base.UnixMilli())
	held = func(b int64) int { return kv.count(string(d.bucketPrefix(nil, b)), "") }
	flush = func() {
		t.Helper()
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return kv, d, base, b0, held, flush
}

// A barrier also drops the lagging buckets no record came to for
// staleEvery records, though one came since the barrier before: those the
// lagging partitions of a backlog passed in the barrier's interval are not
// written to the KV only to be removed at the next barrier. One a record
// came to within staleEvery records stays.
func TestDedupStaleBucketsGoAtABarrierAfterStaleEveryRecords(t *testing.T) {
	defer func(n uint64) { staleEvery = n }(staleEvery)
	staleEvery = 128
	_, d, base, b0, held, flush := staleBucketsSetup(t)
	now := 0
	onTime := func(n int) { // records of the present, an hour on, 10 ms apart: all in bucket b0+60
		for range n {
			mustApply(t, d, recAt(fmt.Sprintf(`{"id":"now-%d"}`, now), base.Add(time.Hour+time.Duration(now)*10*time.Millisecond)))
			now++
		}
	}
	onTime(600) // records 1-600, looks at 128, ..., 512
	flush()
	for i := range 10 { // records 601-610: a partition an hour behind, in b0
		mustApply(t, d, recAt(fmt.Sprintf(`{"id":"late-%d"}`, i), base.Add(time.Duration(i)*time.Second)))
	}
	// Records 611-700 on time: the look at 640 keeps b0 (a record came
	// since 512). Record 701 lags, in b0+2 (its lookup reads b0+1 to b0+3,
	// not b0); 702-760 on time.
	onTime(90)
	mustApply(t, d, recAt(`{"id":"late-b2"}`, base.Add(130*time.Second)))
	onTime(59)
	if d.index.sets[b0] == nil || d.index.sets[b0+2] == nil {
		t.Fatalf("a lagging bucket went before the barrier (b0 %v, b0+2 %v)", d.index.sets[b0] != nil, d.index.sets[b0+2] != nil)
	}
	flush() // b0: no record for 150 records; b0+2: for 59
	if held(b0) != 0 || held(b0+2) == 0 {
		t.Errorf("after the barrier the lagging buckets b0, b0+2 hold %d and %d entries, want none in b0 (no record for 150 records, staleEvery 128) and some in b0+2 (59)", held(b0), held(b0+2))
	}
	if mustApply(t, d, recAt(`{"id":"late-b2"}`, base.Add(140*time.Second))) {
		t.Error("a repeat in the lagging bucket kept at the barrier was kept")
	}
}

// Entries written by earlier versions (one per value, no time bucket) are
// still read, until the newest record is two TTLs past the newest of them;
// then they are removed.
func TestDedupReadsThenRemovesTheEntriesOfEarlierVersions(t *testing.T) {
	kv := NewMemKV()
	var v [9]byte
	v[0] = dedupFormat
	binary.BigEndian.PutUint64(v[1:], uint64(t0.UnixMilli()))
	for _, k := range []string{`transform/dedup/d/"a`, `transform/dedup/d/7`, `transform/dedup/dd/7`} {
		if err := kv.Set([]byte(k), v[:]); err != nil {
			t.Fatal(err)
		}
	}
	d := newDedup(t, kv, "d", "id", time.Minute)
	if mustApply(t, d, recAt(`{"id":"a"}`, t0.Add(30*time.Second))) {
		t.Error("a repeat within the TTL of an earlier version's entry was kept")
	}
	if !mustApply(t, d, recAt(`{"id":7}`, t0.Add(61*time.Second))) {
		t.Error("a repeat after the TTL of an earlier version's entry was dropped")
	}
	if kv.count(`transform/dedup/d/"`, "") != 1 {
		t.Error("the earlier version's entries were removed too soon")
	}
	mustApply(t, d, recAt(`{"id":"b"}`, t0.Add(151*time.Second))) // two TTLs after the newest of them
	if n := kv.count(`transform/dedup/d/"`, "") + kv.count(`transform/dedup/d/7`, ""); n != 0 {
		t.Errorf("%d entries of the earlier version are left", n)
	}
	if kv.count(`transform/dedup/dd/7`, "") != 1 {
		t.Error("another dedup's entry was removed")
	}
}

// countingKV counts a KV's Gets.
type countingKV struct {
	*MemKV
	gets int
}

func (kv *countingKV) Get(k []byte) ([]byte, bool, error) { kv.gets++; return kv.MemKV.Get(k) }

// A value not seen before, or seen longer than the TTL ago, costs no KV
// read: the dedup's in-memory index of its buckets says so. A repeat reads the KV, and so does every lookup in
// a bucket whose set outgrew indexCap; a new instance on the same KV (a
// restart) rebuilds the sets from it and drops the repeats all the same.
func TestDedupReadsTheKVOnlyForValuesItMayHaveSeen(t *testing.T) {
	kv := &countingKV{MemKV: NewMemKV()}
	d := newDedup(t, kv, "d", "id", time.Minute)
	for i := range 100 { // 10 ms apart
		if !mustApply(t, d, recAt(fmt.Sprintf(`{"id":%d}`, i), t0.Add(time.Duration(i)*10*time.Millisecond))) {
			t.Fatalf("id %d dropped at its first sighting", i)
		}
	}
	if kv.gets != 0 {
		t.Errorf("%d KV reads for 100 values never seen before, want 0", kv.gets)
	}
	if !mustApply(t, d, recAt(`{"id":10}`, t0.Add(100*time.Second))) || kv.gets != 0 {
		t.Errorf("a value seen 99.9 s before (TTL 1m) was dropped, or read the KV (%d reads)", kv.gets)
	}
	if mustApply(t, d, recAt(`{"id":99}`, t0.Add(50*time.Second))) || kv.gets != 0 {
		t.Errorf("a repeat of a run still open was kept, or read the KV (%d reads)", kv.gets)
	}
	if mustApply(t, d, recAt(`{"id":5}`, t0.Add(50*time.Second))) || kv.gets == 0 {
		t.Errorf("a repeat of a written run was kept, or found without reading the KV (%d reads)", kv.gets)
	}

	flushed(t, d)
	restarted := newDedup(t, kv, "d", "id", time.Minute)
	if mustApply(t, restarted, recAt(`{"id":10}`, t0.Add(101*time.Second))) {
		t.Error("after a restart, a repeat within the TTL (of id 10's window begun at +100 s) was kept")
	}
	if !mustApply(t, restarted, recAt(`{"id":60}`, t0.Add(101*time.Second))) {
		t.Error("after a restart, a value past its TTL (id 60, first seen at +0.6 s) was dropped")
	}
	kv.gets = 0
	if !mustApply(t, restarted, recAt(`{"id":1000}`, t0.Add(101*time.Second))) || kv.gets != 0 {
		t.Errorf("after a restart, a new value was dropped or read the KV (%d reads)", kv.gets)
	}

	// Past indexCap a Bloom filter answers for the bucket: a new value reads
	// the KV only on a false positive (about 1e-6 a lookup at this filling),
	// and every repeat is still found. Past bloomFactor x indexCap every
	// lookup reads the KV.
	defer func(c int) { indexCap = c }(indexCap)
	indexCap = 10
	full := newDedup(t, &countingKV{MemKV: NewMemKV()}, "d", "id", time.Hour)
	for i := range 20 {
		mustApply(t, full, recAt(fmt.Sprintf(`{"id":%d}`, i), t0))
	}
	fkv := full.kv.(*countingKV)
	fkv.gets = 0
	for i := range 30 {
		if !mustApply(t, full, recAt(fmt.Sprintf(`{"id":"new-%d"}`, i), t0)) {
			t.Fatalf("new value %d dropped in a bucket past indexCap", i)
		}
	}
	if fkv.gets > 3 {
		t.Errorf("%d KV reads for 30 new values in a bucket past indexCap, want almost none", fkv.gets)
	}
	for _, id := range []string{`0`, `15`, `"new-7"`} {
		if mustApply(t, full, recAt(`{"id":`+id+`}`, t0)) {
			t.Errorf("the repeat %s in a bucket past indexCap was kept", id)
		}
	}
	for i := range 15 { // 55 by value (past the 10 numbered): past the filter's 50
		mustApply(t, full, recAt(fmt.Sprintf(`{"id":"more-%d"}`, i), t0))
	}
	fkv.gets = 0
	if !mustApply(t, full, recAt(`{"id":"newer"}`, t0)) || fkv.gets == 0 {
		t.Errorf("a bucket past the filter's capacity answered without reading the KV (%d reads)", fkv.gets)
	}
}

// The Bloom filter never loses a fingerprint it was given, and at its
// capacity says "maybe" for about 1% of the others (2% allowed).
func TestBloomNeverForgetsAndRarelyLies(t *testing.T) {
	const n = 100_000
	mem := newBloom(n)
	defer runtime.KeepAlive(mem) // b's memory
	b := bloom(mem.W)
	for i := range uint64(n) {
		if !b.add(i * 2654435761 & 0xffffffff) {
			t.Fatalf("add %d of %d said the filter is over capacity", i, n)
		}
	}
	for i := range uint64(n) {
		if !b.has(i * 2654435761 & 0xffffffff) {
			t.Fatalf("fingerprint %d was added and is absent", i)
		}
	}
	fp := 0
	for i := range uint64(n) {
		if b.has(0x1_0000_0000 + i) { // never added: fingerprints are 32 bits
			fp++
		}
	}
	if rate := float64(fp) / n; rate > 0.02 {
		t.Errorf("%.2f%% false positives at capacity, want about 1%%", 100*rate)
	}
	if b.add(1) {
		t.Error("one past the capacity was not reported")
	}
}

// Around bucket boundaries (buckets are one TTL wide, aligned on the
// epoch), across a restart, and with entries of earlier versions newer
// than the first record after the start, a repeat within the TTL is
// dropped, as long as it is at most a TTL older than the newest record.
func TestDedupFindsWindowsAcrossBucketsRestartsAndUpgrades(t *testing.T) {
	edge := time.UnixMilli(1_700_000_000_000) // a multiple of 10 s: a bucket boundary
	at := func(ms int) time.Time { return edge.Add(time.Duration(ms) * time.Millisecond) }

	d := newDedup(t, NewMemKV(), "d", "id", 10*time.Second)
	mustApply(t, d, recAt(`{"id":"a"}`, at(9_999)))
	mustApply(t, d, recAt(`{"id":"x"}`, at(20_000))) // the newest enters bucket 2
	if mustApply(t, d, recAt(`{"id":"a"}`, at(19_998))) {
		t.Error("a repeat 9.999 s after its first sighting, 2 ms older than the newest record, was kept")
	}

	kv := NewMemKV()
	before := newDedup(t, kv, "d", "id", 10*time.Second)
	mustApply(t, before, recAt(`{"id":"a"}`, at(10_000)))
	flushed(t, before)
	restarted := newDedup(t, kv, "d", "id", 10*time.Second)
	if mustApply(t, restarted, recAt(`{"id":"a"}`, at(9_999))) {
		t.Error("after a restart, a record 1 ms older than a window's first sighting (the bucket after its own) was kept")
	}

	kv = NewMemKV()
	var v [9]byte
	v[0] = dedupFormat
	binary.BigEndian.PutUint64(v[1:], uint64(at(15_000).UnixMilli()))
	if err := kv.Set([]byte(`transform/dedup/d/"a`), v[:]); err != nil {
		t.Fatal(err)
	}
	upgraded := newDedup(t, kv, "d", "id", 10*time.Second)
	mustApply(t, upgraded, recAt(`{"id":"b"}`, at(0)))
	if mustApply(t, upgraded, recAt(`{"id":"a"}`, at(20_000))) {
		t.Error("a repeat within the TTL of an earlier version's entry, newer than the first record after the start, was kept")
	}
}

// Record times at the ends of int64 milliseconds (a producer's CreateTime
// can be anything) still dedup: a repeat a millisecond later is dropped, a
// new value kept. Near ±2^63 the window's end and the buckets' bounds
// wrapped, and the repeat was kept.
func TestDedupAtTheEndsOfTime(t *testing.T) {
	for _, at := range []int64{math.MaxInt64 - 1000, math.MinInt64 + 10, math.MaxInt64 - 1, math.MinInt64, 1 << 62, -1 << 62} {
		for _, ttl := range []time.Duration{time.Millisecond, time.Minute} {
			d := newDedup(t, NewMemKV(), "d", "id", ttl)
			first, next := time.UnixMilli(at), time.UnixMilli(at+1)
			if !mustApply(t, d, recAt(`{"id":"x"}`, first)) {
				t.Errorf("at %d ms, ttl %v: the first x was dropped", at, ttl)
			}
			if mustApply(t, d, recAt(`{"id":"x"}`, next)) && ttl > time.Millisecond {
				t.Errorf("at %d ms, ttl %v: a repeat of x 1 ms later was kept", at, ttl)
			}
			if !mustApply(t, d, recAt(`{"id":"y"}`, next)) {
				t.Errorf("at %d ms, ttl %v: a new value was dropped", at, ttl)
			}
		}
	}
}

// At the end of a backlog no record comes to look for stale buckets every
// staleEvery records: the buckets the lagging partitions wrote into last,
// below the expired ones, go at the barrier after the first that saw no
// record come to them (Flush). One a record came to since the last barrier
// stays until the next, and its repeats are still dropped until then.
func TestDedupStaleBucketsGoAtBarriersAfterTheLastRecord(t *testing.T) {
	kv, d, base, b0, held, flush := staleBucketsSetup(t)
	for i := range 600 { // ten minutes of the present, an hour on: b0+60 to b0+69
		mustApply(t, d, recAt(fmt.Sprintf(`{"id":"now-%d"}`, i), base.Add(time.Hour+time.Duration(i)*time.Second)))
	}
	// A partition an hour behind writes into expired buckets b0 to b0+2.
	for i := range 180 {
		mustApply(t, d, recAt(fmt.Sprintf(`{"id":"late-%d"}`, i), base.Add(time.Duration(i)*time.Second)))
	}
	flush()
	if held(b0) == 0 || held(b0+2) == 0 {
		t.Fatalf("after the first barrier the lagging buckets hold %d and %d entries: records came to them since the barrier before", held(b0), held(b0+2))
	}
	// A record into b0+2 (its lookup reads b0+1 too, not b0).
	mustApply(t, d, recAt(`{"id":"late-last"}`, base.Add(170*time.Second)))
	flush()
	if held(b0) != 0 || held(b0+2) == 0 {
		t.Errorf("after the second barrier the lagging buckets b0, b0+2 hold %d and %d entries, want none in b0 (no record came to it since the first barrier) and some in b0+2", held(b0), held(b0+2))
	}
	if mustApply(t, d, recAt(`{"id":"late-160"}`, base.Add(175*time.Second))) {
		t.Error("a repeat in the lagging bucket a record came to since the last barrier was kept")
	}
	flush() // the repeat's lookup came to b0+2 since the last barrier
	flush()
	kept := held(b0+67) + held(b0+68) + held(b0+69)
	if held(b0+67) == 0 || held(b0+69) == 0 || kv.Len() != kept {
		t.Errorf("after two barriers with no record the state holds %d entries, want only the %d of the three kept buckets", kv.Len(), kept)
	}
	if mustApply(t, d, recAt(`{"id":"now-599"}`, base.Add(time.Hour+599*time.Second))) {
		t.Error("a repeat in the newest bucket was kept after the stale ones went")
	}
}
