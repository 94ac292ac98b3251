package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The dedup of repeats keeps of each key its first record and every
// ninth after it: with 10M records over 100k keys, 12 blocks of 100k, the
// topic's last records among them (its drain ends when they are visible).
func TestRepeatsKeepOneRecordInNineOfEachKeyAndTheTopicsLast(t *testing.T) {
	s := spec{topic: topic{Records: 10_000_000, Size: 100}, keys: 100_000, keepEvery: 9}
	if n := s.expectedRecords(); n != 1_200_000 {
		t.Errorf("%d records expected, want 1,200,000", n)
	}
	for _, c := range []struct {
		id   int64
		kept bool
	}{{0, true}, {99_999, true}, {100_000, false}, {899_999, false}, {900_000, true}, {9_899_999, false}, {9_999_999, true}} {
		if s.kept(c.id) != c.kept {
			t.Errorf("record %d kept %v, want %v", c.id, !c.kept, c.kept)
		}
	}
	if s.expectedBytes() != 1_200_000*101 {
		t.Errorf("%d bytes expected", s.expectedBytes())
	}
	all := spec{topic: topic{Records: 1000, Size: 100}, keys: 100}
	if all.expectedRecords() != 1000 || !all.kept(999) {
		t.Errorf("without repeats: %d records expected", all.expectedRecords())
	}
}

// verify counts a repeat the dedup should have dropped apart from the
// records it must keep, missing or twice.
func TestVerifyTellsRepeatsFromMissingAndDuplicateRecords(t *testing.T) {
	dir := t.TempDir()
	line := func(id int) string { return fmt.Sprintf(`{"id":"r%010d","u":"u0"}`+"\n", id) }
	keep := func(id int64) bool { return id%3 == 0 }
	write := func(name string, ids ...int) {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(line(id))
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", 0, 3, 6)
	write("b", 9)
	v, err := verify(dir, 12, 4, keep)
	if err != nil || !v.ExactlyOnce(4) {
		t.Fatalf("the four kept records once: %v, %v", v, err)
	}
	write("c", 4, 6)
	write("b")
	v, err = verify(dir, 12, 4, keep)
	if err != nil || v.ExactlyOnce(4) || v.Dropped != 1 || v.Duplicates != 1 || v.Missing != 1 {
		t.Fatalf("a repeat, a duplicate and a missing record: %v, %v", v, err)
	}
}

// The runs of a dedup of repeats that each kept the records to keep, once,
// are exactly once together (the summary compared them with the input's
// record count, and reported every run as failing).
func TestMedianOfRepeatsRunsIsExactlyOnce(t *testing.T) {
	s := spec{topic: topic{Records: 10_000_000, Size: 100}, keys: 100_000, keepEvery: 9}
	n := s.expectedRecords()
	var runs []*result
	for i := range 3 {
		runs = append(runs, &result{Topic: s.topic, RecordsPerS: float64(i), Verified: "exactly once",
			Check: &verification{Lines: n, Distinct: n}})
	}
	var b bench
	if m := b.median(s, runs); m.Verified != "exactly once (3 of 3 runs)" {
		t.Errorf("median verified %q", m.Verified)
	}
}
