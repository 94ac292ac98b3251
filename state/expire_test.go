package state

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/connector-dev/connector/internal/keygroup"
)

// Expired keys leave the database when Expire returns, without a
// compaction: the tables that hold only expired keys are no longer live,
// their files go soon after, and the keys kept are all still there, those
// in a table that straddles the range's bound too.
func TestExpireFreesTheSpaceOfExpiredKeys(t *testing.T) {
	// No compaction may run: the space must be freed by Expire alone. The
	// memtable holds each batch of writes below until the test flushes it.
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true; o.MemTableSize = 8 << 20 }
	t.Cleanup(func() { testPebbleOptions = nil })
	s := openCfg(t, Config{Dir: filepath.Join(t.TempDir(), "work"), KeyGroups: keygroup.Range{Start: 0, End: 1}})
	value := string(make([]byte, 100))
	// Four memtable flushes of old keys, then one that straddles: old
	// keys and the first kept ones.
	for f := range 4 {
		for i := range 20_000 {
			set(t, s, fmt.Sprintf("old/%d/%06d", f, i), value)
		}
		flush(t, s)
	}
	for i := range 1000 {
		set(t, s, fmt.Sprintf("old/9/%06d", i), value)
		set(t, s, fmt.Sprintf("new/%06d", i), value)
	}
	flush(t, s)
	// Unflushed writes: expired ones, and kept ones.
	for i := range 1000 {
		set(t, s, fmt.Sprintf("old/8/%06d", i), value)
		set(t, s, fmt.Sprintf("new/%06d", 1000+i), value)
	}
	m := s.db.Metrics()
	before, beforeDisk := tablesSize(m), m.DiskSpaceUsage()
	if n := m.Levels[0].TablesCount; n != 6 {
		t.Fatalf("%d tables in L0, want the Store's markers' and the 5 flushed", n)
	}

	if err := s.Expire([]byte("old/"), []byte("old0")); err != nil {
		t.Fatal(err)
	}
	if err := s.Scan([]byte("old/"), []byte("old0"), func(k, _ []byte) error { return fmt.Errorf("expired key %q is still there", k) }); err != nil {
		t.Error(err)
	}
	n := 0
	if err := s.Scan([]byte("new/"), []byte("new0"), func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 2000 {
		t.Errorf("%d kept keys after the expiry, want 2000", n)
	}
	// The expiry waits in Pebble's flush queue behind the memtable that
	// held expired writes; once they are flushed, what is left is the kept
	// part of the straddling table and of the memtable's.
	flush(t, s)
	if after := tablesSize(s.db.Metrics()); after > before/10 {
		t.Errorf("tables of %d bytes after the expiry, %d before: the expired keys' tables are still in the database", after, before)
	}
	// A key written into the range after the expiry stays.
	set(t, s, "old/7/000001", "again")
	if v, ok, err := s.Get([]byte("old/7/000001")); err != nil || !ok || string(v) != "again" {
		t.Errorf(`Get of a key set after the expiry = %q, %v, %v; want "again"`, v, ok, err)
	}
	// Pebble removes the obsolete files on a goroutine of its own.
	deadline := time.Now().Add(10 * time.Second)
	for s.db.Metrics().DiskSpaceUsage() > beforeDisk/10 {
		if time.Now().After(deadline) {
			t.Fatalf("disk space %d bytes 10 s after the expiry, %d before: the expired tables' files are still there", s.db.Metrics().DiskSpaceUsage(), beforeDisk)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A snapshot taken by a Store at Pebble's oldest format (every snapshot
// before formatVersion) restores into a Store that can expire, and the
// snapshot's own files are left as they were.
func TestASnapshotOfAnOlderFormatRestoresAndExpires(t *testing.T) {
	root := t.TempDir()
	testPebbleOptions = func(o *pebble.Options) { o.FormatMajorVersion = pebble.FormatMinSupported }
	old := openT(t, root, "")
	testPebbleOptions = nil
	for i := range 100 {
		set(t, old, fmt.Sprintf("old/%03d", i), "x")
		set(t, old, fmt.Sprintf("new/%03d", i), "y")
	}
	flush(t, old)
	chk := filepath.Join(root, "chk-1", "worker-0")
	h := snapshot(t, old, chk)
	if v := old.db.FormatMajorVersion(); v != pebble.FormatMinSupported {
		t.Fatalf("the old store is at format %v, want %v", v, pebble.FormatMinSupported)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	files := fileSizes(t, chk)

	s := openT(t, filepath.Join(root, "restored"), h.Dir)
	if v := s.db.FormatMajorVersion(); v != formatVersion {
		t.Errorf("the restored store is at format %v, want %v", v, formatVersion)
	}
	if err := s.Expire([]byte("old/"), []byte("old0")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 100 {
		want[fmt.Sprintf("new/%03d", i)] = "y"
	}
	wantContents(t, s, want)
	if got := fileSizes(t, chk); !maps.Equal(got, files) {
		t.Errorf("the snapshot's files changed on restore: %v, were %v", got, files)
	}
}

// tablesSize is the size of the database's tables, its virtual tables'
// estimates included.
func tablesSize(m *pebble.Metrics) int64 {
	var n int64
	for _, l := range m.Levels {
		n += l.TablesSize
	}
	return n
}

// The manifest, which every flush and Expire appends an edit to and every
// full snapshot copies, stays small however many edits there were.
func TestTheManifestStaysSmall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	s := openCfg(t, Config{Dir: dir})
	for i := range 4000 {
		set(t, s, fmt.Sprintf("b/%05d/x", i), "v")
		flush(t, s)
		if err := s.Expire([]byte(fmt.Sprintf("b/%05d/", i)), []byte(fmt.Sprintf("b/%05d0", i))); err != nil {
			t.Fatal(err)
		}
	}
	names, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // an old one, removed by Pebble since
		}
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total > 160<<10 {
		t.Errorf("manifests of %d bytes after 8,000 edits, want at most 160 KiB", total)
	}
}
