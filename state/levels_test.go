package state

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestL0TablesHaveNoFilter: a memtable flush writes an L0 table without a
// bloom filter; a compaction that rewrites it into a lower level gives it
// one; both are snappy-compressed; lookups find what is there and nothing
// else, from either.
func TestL0TablesHaveNoFilter(t *testing.T) {
	s := openT(t, t.TempDir(), "")
	// Two flushes of the same keys: their tables overlap, so the compaction
	// below rewrites them instead of moving one table down as it is.
	for round := range 2 {
		for i := range 2000 {
			set(t, s, fmt.Sprintf("key-%05d", i), strings.Repeat(fmt.Sprintf("value %d of round %d ", i, round), 4))
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, wantLevel func(int) bool, compression, filter string) {
		t.Helper()
		levels, err := s.db.SSTables(pebble.WithProperties())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for level, tables := range levels {
			for _, tb := range tables {
				n++
				if !wantLevel(level) {
					t.Errorf("%s: a table in L%d", when, level)
				}
				if p := tb.Properties; p.CompressionName != compression || p.FilterPolicyName != filter {
					t.Errorf("%s: an L%d table with compression %q and filter %q, want %q and %q",
						when, level, p.CompressionName, p.FilterPolicyName, compression, filter)
				}
			}
		}
		if n == 0 {
			t.Fatalf("%s: no table", when)
		}
		for _, k := range []string{"key-00000", "key-01999"} {
			if v, ok, err := s.Get([]byte(k)); err != nil || !ok || !strings.Contains(string(v), "of round 1") {
				t.Errorf("%s: Get(%s) = %q, %v, %v; want round 1's value", when, k, v, ok, err)
			}
		}
		if _, ok, err := s.Get([]byte("key-02000")); ok || err != nil {
			t.Errorf("%s: Get of a key never set: found %v, err %v", when, ok, err)
		}
	}
	check("after the flushes", func(l int) bool { return l == 0 }, "Snappy", "")
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	check("after a compaction", func(l int) bool { return l > 0 }, "Snappy", "rocksdb.BuiltinBloomFilter")
}
