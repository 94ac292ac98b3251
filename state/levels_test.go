package state

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
)

// TestL0TablesHaveNoFilter: a memtable flush writes an L0 table without a
// bloom filter, compressed with snappy; a compaction that rewrites it into
// a lower level gives it one, and zstd1; lookups find what is there and
// nothing else, from either.
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
	check("after a compaction", func(l int) bool { return l > 0 }, "zstd1", "rocksdb.BuiltinBloomFilter")
}

// zstd1 is zstd at level 1 for every kind of block, with no fallback to
// another algorithm: it is built from Pebble's "Balanced" profile, whose
// settings a Pebble upgrade may change. (A table whose profile Pebble
// cannot write at the store's format is written with snappy and says so in
// its properties: TestL0TablesHaveNoFilter checks they say zstd1.)
func TestTablesAreZstd1(t *testing.T) {
	for name, got := range map[string]string{
		"data blocks":  zstd1.DataBlocks.String(),
		"value blocks": zstd1.ValueBlocks.String(),
		"other blocks": zstd1.OtherBlocks.String(),
	} {
		if got != "ZSTD1" {
			t.Errorf("zstd1's %s are %s, want ZSTD1", name, got)
		}
	}
	if zstd1.AdaptiveReductionCutoffPercent != 0 || zstd1.UsesMinLZ() {
		t.Errorf("zstd1 falls back to another algorithm: %+v", *zstd1)
	}
}

// A snapshot whose tables are all snappy's (every snapshot of the
// versions before zstd1) restores and reads as it was, and a compaction
// rewrites its tables into zstd1. Pebble compacts only when told to here,
// so that the tables are where the test put them.
func TestASnapshotOfSnappyTablesRestores(t *testing.T) {
	root := t.TempDir()
	t.Cleanup(func() { testPebbleOptions = nil })
	testPebbleOptions = func(o *pebble.Options) {
		o.DisableAutomaticCompactions = true
		for i := range o.Levels {
			o.Levels[i].Compression = func() *block.CompressionProfile { return block.SnappyCompression }
		}
	}
	old := openT(t, root, "")
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true }
	want := map[string]string{}
	for i := range 2000 {
		k, v := fmt.Sprintf("old/%05d", i), strings.Repeat(fmt.Sprintf("value %d ", i), 4)
		set(t, old, k, v)
		want[k] = v
	}
	flush(t, old)
	if err := old.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	// names counts s's tables by compression, below L0 and in L0.
	names := func(s *Store) (below, l0 map[string]int) {
		t.Helper()
		levels, err := s.db.SSTables(pebble.WithProperties())
		if err != nil {
			t.Fatal(err)
		}
		below, l0 = map[string]int{}, map[string]int{}
		for level, tables := range levels {
			for _, tb := range tables {
				if level == 0 {
					l0[tb.Properties.CompressionName]++
				} else {
					below[tb.Properties.CompressionName]++
				}
			}
		}
		return below, l0
	}
	if below, _ := names(old); below["Snappy"] == 0 || len(below) != 1 {
		t.Fatalf("the old store's tables below L0: %v, want snappy's only", below)
	}
	h := snapshot(t, old, filepath.Join(root, "chk-1", "worker-0"))
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openT(t, filepath.Join(root, "restored"), h.Dir)
	wantContents(t, s, want)
	for i := range 2000 {
		k, v := fmt.Sprintf("new/%05d", i), fmt.Sprintf("new value %d", i)
		set(t, s, k, v)
		want[k] = v
	}
	flush(t, s)
	if below, l0 := names(s); below["Snappy"] == 0 || len(below) != 1 || l0["Snappy"] == 0 || len(l0) != 1 {
		t.Errorf("the restored store's tables after a flush: %v below L0, %v in L0; want snappy's", below, l0)
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	if below, l0 := names(s); below["zstd1"] == 0 || len(below) != 1 || len(l0) != 0 {
		t.Errorf("the restored store's tables after a compaction: %v below L0, %v in L0; want zstd1's below L0 only", below, l0)
	}
	wantContents(t, s, want)
}
