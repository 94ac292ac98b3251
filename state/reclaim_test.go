package state

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A table that straddles an expired range's bound stays on disk whole
// (Expire cuts it into a virtual table of the kept keys); the next barrier
// compacts it when its file is mostly dead, and the kept keys stay. No
// automatic compaction runs, so nothing else can free the file.
func TestABarrierCompactsTheFilesExpiryLeftMostlyDead(t *testing.T) {
	s, root := openReclaim(t)
	// Two tables, as two flushes of a dedup's, over the same span.
	want := writeStraddling(t, s, 2, incompressible())
	checkpointT(t, s, root, 1) // a barrier before the expiry: nothing to reclaim
	if s.reclaiming != nil {
		t.Fatal("a barrier with no virtual table started a reclaim")
	}
	expireA(t, s)
	if d, err := s.deadSpan(); err != nil || d.rewrite > 300<<10 {
		t.Fatalf("after the expiry: %d bytes to rewrite, %v; want the kept keys' 100 KB (by Pebble's estimate, up to 300)", d.rewrite, err)
	}
	disk := s.db.Metrics().DiskSpaceUsage()

	checkpointT(t, s, root, 2)
	waitReclaim(t, s)
	// Pebble removes the obsolete files on a goroutine of its own.
	deadline := time.Now().Add(10 * time.Second)
	for s.db.Metrics().DiskSpaceUsage() > disk/3 {
		if time.Now().After(deadline) {
			t.Fatalf("disk space %d bytes 10 s after the reclaim, %d before: the expired keys' files are still there", s.db.Metrics().DiskSpaceUsage(), disk)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantContents(t, s, want)
	checkpointT(t, s, root, 3) // ends the reclaim's account, starts none
	if s.reclaiming != nil {
		t.Error("a barrier after the reclaim started another")
	}
	// The checkpoint taken after the reclaim restores the kept keys (and
	// the expired ones: an expiry is not in the changelogs, expire.go).
	c := checkpointT(t, s, root, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	restored := contents(t, openCfg(t, Config{Dir: filepath.Join(root, "again"), Restore: whole(c)}))
	for k, v := range want {
		if restored[k] != v {
			t.Errorf("restored %q = %d bytes, want its %d", k, len(restored[k]), len(v))
		}
	}
}

// A reclaim whose compaction would rewrite more than it frees waits: here
// a table of 2 MB spans the mostly dead ones' kept keys.
func TestAReclaimRewritesNoMoreThanItFrees(t *testing.T) {
	s, root := openReclaim(t)
	value := incompressible()
	writeStraddling(t, s, 2, value)
	for i := range 10_000 { // between the kept keys: b/000000x00000
		set(t, s, fmt.Sprintf("b/%06dx%05d", i*4000/10_000, i), value())
	}
	flush(t, s)
	expireA(t, s)
	if d, err := s.deadSpan(); err != nil || d.rewrite < 2<<20 {
		t.Fatalf("after the expiry: %d bytes to rewrite, %v; want more than 2 MB", d.rewrite, err)
	}
	checkpointT(t, s, root, 1)
	if s.reclaiming != nil {
		t.Error("a barrier started a reclaim that rewrites 2 MB to free 800 KB")
	}
}

// A table alone in its span, at the last level, is rewritten too: as at
// rest, where the last reclaim wrote the kept buckets into one table at
// the last level and the next expiry cut it again. Pebble's compaction
// would move a lone table down, and never compacts the last level into
// itself; the key reclaimSpace writes again (overlap) gives it a table to
// compact with.
func TestALoneTableAtTheLastLevelIsRewritten(t *testing.T) {
	s, root := openReclaim(t)
	want := writeStraddling(t, s, 1, incompressible())
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	expireA(t, s)
	levels, err := s.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(levels[6]); n != 1 || !levels[6][0].Virtual {
		t.Fatalf("the last level holds %d tables (%+v), want the one virtual table the expiry cut", n, levels[6])
	}
	checkpointT(t, s, root, 1)
	waitReclaim(t, s)
	wantContents(t, s, want)
	checkpointT(t, s, root, 2)
	if s.reclaiming != nil {
		t.Error("a barrier after the reclaim started another")
	}
}

// Close stops a reclaim under way before the database closes.
func TestCloseWaitsForAReclaim(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	writeStraddling(t, s, 2, incompressible())
	expireA(t, s)
	checkpointT(t, s, root, 1)
	r := s.reclaiming
	if r == nil {
		t.Fatal("no reclaim started")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	default:
		t.Error("Close returned before the reclaim ended")
	}
}

// openReclaim opens a Store under a new root whose Pebble runs no
// compaction of its own (only a reclaim's can free a file) and holds the
// writes until the test flushes them.
func openReclaim(t *testing.T) (*Store, string) {
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true; o.MemTableSize = 8 << 20 }
	t.Cleanup(func() { testPebbleOptions = nil })
	root := t.TempDir()
	return openCfg(t, Config{Dir: filepath.Join(root, "work")}), root
}

// writeStraddling writes, in n flushed tables over the same span, 4,000
// keys a/ (800 KB, which expireA expires) and 500 keys b/ (100 KB, kept),
// and returns the kept ones.
func writeStraddling(t *testing.T, s *Store, n int, value func() string) map[string]string {
	kept := map[string]string{}
	for f := range n {
		for i := f; i < 4000; i += n {
			set(t, s, fmt.Sprintf("a/%06d", i), value())
			if (i/n)%8 == 0 {
				k, v := fmt.Sprintf("b/%06d", i), value()
				set(t, s, k, v)
				kept[k] = v
			}
		}
		flush(t, s)
	}
	return kept
}

// expireA expires writeStraddling's a/ keys, and checks that their bytes
// stay on disk, dead, in the files of the tables the expiry cut.
func expireA(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Expire([]byte("a/"), []byte("a0")); err != nil {
		t.Fatal(err)
	}
	if d, err := s.deadSpan(); err != nil || d.dead < 700<<10 {
		t.Fatalf("dead bytes after the expiry: %d, %v; want the expired keys' 800 KB", d.dead, err)
	}
}

// waitReclaim waits for the reclaim the last barrier started, and checks
// that no dead bytes are left.
func waitReclaim(t *testing.T, s *Store) {
	t.Helper()
	r := s.reclaiming
	if r == nil {
		t.Fatal("the barrier after the expiry started no reclaim")
	}
	<-r.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if d, err := s.deadSpan(); err != nil || d.dead != 0 {
		t.Errorf("dead bytes after the reclaim: %d, %v; want none", d.dead, err)
	}
}

// incompressible returns a maker of 200-byte values that do not compress,
// so that a table's size is its values'.
func incompressible() func() string {
	rnd := rand.New(rand.NewPCG(1, 2))
	return func() string {
		b := make([]byte, 200)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return string(b)
	}
}
