package transform

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/record"
)

// Prefetching is a hint: a chain that prefetches every window of records
// before it applies them, as a worker does, keeps and drops exactly the
// records one that does not keeps and drops. The records repeat values
// within and past the TTL, go back in time (skew) and on over buckets
// that expire; some keys have escapes, are numbers or null, some records
// lack the field, and some marks are out of the value's range.
func TestPrefetchChangesNoDecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	base := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	var values []string
	var marks []record.Span
	var times []time.Time
	at := 0
	for i := range 20000 {
		at += rng.IntN(5) // 40 s of records, TTL 2 s: buckets fill, grow and expire
		ts := at
		if rng.IntN(50) == 0 {
			ts -= rng.IntN(3000) // a lagging partition's record
		}
		var key string
		switch n := rng.IntN(4000); {
		case n < 20:
			key = `null`
		case n < 60:
			key = fmt.Sprint(n)
		case n < 100:
			key = fmt.Sprintf(`"esc\"aped%d"`, n)
		default:
			key = fmt.Sprintf(`"u%05d"`, n)
		}
		v := fmt.Sprintf(`{"i":%d,"u":%s}`, i, key)
		start := strings.Index(v, `"u":`) + 4
		mark := record.Span{Start: int32(start), End: int32(start + len(key))}
		switch rng.IntN(100) {
		case 0:
			v = fmt.Sprintf(`{"i":%d}`, i)
			mark = record.Span{}
		case 1:
			mark.End = int32(len(v) + 5) // past the value: neither reads it
		case 2:
			mark.End = mark.Start // empty, or backwards: both decode instead
		case 3:
			mark.Start, mark.End = mark.End, mark.Start
		}
		values, marks, times = append(values, v), append(marks, mark), append(times, base.Add(time.Duration(ts)*time.Millisecond))
	}
	run := func(prefetch bool) ([]bool, *Dedup) {
		ch, err := Build([]Spec{{KindDedup, DedupConfig{Key: "u", TTL: 2 * time.Second}}}, NewMemKV())
		if err != nil {
			t.Fatal(err)
		}
		ch.UseKeyField("u")
		rs := make([]record.Record, len(values))
		for i := range rs {
			rs[i] = *recAt(values[i], times[i])
			rs[i].KeyField = marks[i]
		}
		kept := make([]bool, len(rs))
		for i := range rs {
			if prefetch && i%PrefetchWindow == 0 {
				ch.Prefetch(rs[i:min(i+PrefetchWindow, len(rs))])
			}
			var err error
			if kept[i], err = ch.Apply(&rs[i]); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
		return kept, ch.steps[0].t.(*Dedup)
	}
	want, _ := run(false)
	got, d := run(true)
	dropped := 0
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d (%s at %v): kept %v with prefetching, %v without", i, values[i], times[i], got[i], want[i])
		}
		if !want[i] {
			dropped++
		}
	}
	if dropped < 1000 || dropped > len(want)-1000 {
		t.Errorf("%d of %d records dropped: the stream should both keep and drop", dropped, len(want))
	}
	if d.prefetched < uint64(len(values)) {
		t.Errorf("%d slots prefetched for %d records: the prefetch did not run", d.prefetched, len(values))
	}
}

// The prefetch loads the slots of what the lookup hashes: for every key
// form it does not leave out (escaped strings, null), hashing hashedForm
// of the raw value gives the hash applyDoc looks up. Were the two to
// differ, the prefetch would load the wrong slots, which no decision shows.
func TestPrefetchHashesWhatTheLookupHashes(t *testing.T) {
	ch, err := Build([]Spec{{KindDedup, DedupConfig{Key: "u", TTL: time.Second}}}, NewMemKV())
	if err != nil {
		t.Fatal(err)
	}
	ch.UseKeyField("u")
	d := ch.steps[0].t.(*Dedup)
	at := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	direct := 0
	for _, key := range []string{`"u1"`, `"1"`, `1`, `-1.5e3`, `true`, `false`, `""`, `"é"`, `{"a":[1,"b"]}`, `[1,2]`, `"esc\"aped"`, `"\u0041"`, `null`} {
		v := `{"i":1,"u":` + key + `}`
		start := strings.Index(v, `"u":`) + 4
		r := recAt(v, at)
		r.KeyField = record.Span{Start: int32(start), End: int32(start + len(key))}
		if _, err := ch.Apply(r); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		form, ok := hashedForm([]byte(key))
		if !ok || key == "null" {
			continue
		}
		direct++
		if got, want := maphash.Bytes(d.index.seed, form), d.hash; got != want {
			t.Errorf("%s: the prefetch hashes %q (%x), the lookup %q (%x)", key, form, got, d.val, want)
		}
	}
	if direct != 10 {
		t.Errorf("%d keys hashed in place, want 10: hashedForm leaves out more or less than escaped strings", direct)
	}
}
