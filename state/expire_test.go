package state

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/connector-dev/connector/internal/keygroup"
)

// Expired keys free their space although L0 is compacted late: the files
// that hold only expired keys are gone once the compaction the Store starts
// after Expire has run, and the keys kept are all still there.
func TestExpireFreesTheSpaceOfExpiredKeys(t *testing.T) {
	s := openCfg(t, Config{Dir: filepath.Join(t.TempDir(), "work"), KeyGroups: keygroup.Range{Start: 0, End: 1}})
	value := make([]byte, 100)
	// Four memtable flushes of old keys, under L0's compaction threshold,
	// then one of keys to keep.
	for f := range 4 {
		for i := range 20_000 {
			set(t, s, fmt.Sprintf("old/%d/%06d", f, i), string(value))
		}
		flush(t, s)
	}
	for i := range 1000 {
		set(t, s, fmt.Sprintf("new/%06d", i), string(value))
	}
	flush(t, s)
	before := s.db.Metrics().DiskSpaceUsage()
	if n := s.db.Metrics().Levels[0].TablesCount; n < 5 {
		t.Fatalf("%d files in L0, want the 5 flushed (the test needs L0 not compacted yet)", n)
	}
	if err := s.Expire([]byte("old/"), []byte("old0")); err != nil {
		t.Fatal(err)
	}
	s.comp.wg.Wait() // the compaction it started, and the gap after it
	after := s.db.Metrics().DiskSpaceUsage()
	if after > before/4 {
		t.Errorf("disk space %d bytes after the expiry, %d before: the expired keys' files are still there", after, before)
	}
	n := 0
	if err := s.Scan([]byte("new/"), []byte("new0"), func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1000 {
		t.Errorf("%d kept keys after the compaction, want 1000", n)
	}
}
