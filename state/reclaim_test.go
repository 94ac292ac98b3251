package state

import (
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
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true; o.MemTableSize = 8 << 20 }
	t.Cleanup(func() { testPebbleOptions = nil })
	root := t.TempDir()
	s := openCfg(t, Config{Dir: filepath.Join(root, "work")})
	value := incompressible()
	// Two tables, as two flushes of a dedup's: each with 2,000 keys to
	// expire (400 KB) and 250 to keep (50 KB), over the same span (a
	// table alone in its span would be moved down by Pebble's compaction,
	// not rewritten: reclaim.go).
	want := map[string]string{}
	for f := range 2 {
		for i := f; i < 4000; i += 2 {
			set(t, s, fmt.Sprintf("a/%06d", i), value())
			if i%8 < 2 {
				k, v := fmt.Sprintf("b/%06d", i), value()
				set(t, s, k, v)
				want[k] = v
			}
		}
		flush(t, s)
	}
	checkpointT(t, s, root, 1) // a barrier before the expiry: nothing to reclaim
	if s.reclaiming != nil {
		t.Fatal("a barrier with no virtual table started a reclaim")
	}
	if err := s.Expire([]byte("a/"), []byte("a0")); err != nil {
		t.Fatal(err)
	}
	if _, _, dead, _, err := s.deadSpan(nil); err != nil || dead < 700<<10 {
		t.Fatalf("dead bytes after the expiry: %d, %v; want the expired keys' 800 KB", dead, err)
	}
	disk := s.db.Metrics().DiskSpaceUsage()

	checkpointT(t, s, root, 2)
	r := s.reclaiming
	if r == nil {
		t.Fatal("the barrier after the expiry started no reclaim")
	}
	<-r.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if _, _, dead, _, err := s.deadSpan(nil); err != nil || dead != 0 {
		t.Errorf("dead bytes after the reclaim: %d, %v; want none", dead, err)
	}
	// Pebble removes the obsolete file on a goroutine of its own.
	deadline := time.Now().Add(10 * time.Second)
	for s.db.Metrics().DiskSpaceUsage() > disk/3 {
		if time.Now().After(deadline) {
			t.Fatalf("disk space %d bytes 10 s after the reclaim, %d before: the expired keys' file is still there", s.db.Metrics().DiskSpaceUsage(), disk)
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

// Close stops a reclaim under way before the database closes.
func TestCloseWaitsForAReclaim(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20_000 {
		set(t, s, fmt.Sprintf("a/%06d", i), fmt.Sprintf("%0200d", i))
		set(t, s, fmt.Sprintf("b/%06d", i), fmt.Sprintf("%0200d", i))
	}
	flush(t, s)
	if err := s.Expire([]byte("a/"), []byte("a0")); err != nil {
		t.Fatal(err)
	}
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

// A table alone in its span is moved down by Pebble's compaction, not
// rewritten: its reclaim does nothing, and the barriers after it do not
// start it again and again.
func TestALoneTableIsReclaimedOnce(t *testing.T) {
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true; o.MemTableSize = 8 << 20 }
	t.Cleanup(func() { testPebbleOptions = nil })
	root := t.TempDir()
	s := openCfg(t, Config{Dir: filepath.Join(root, "work")})
	value := incompressible()
	for i := range 4000 {
		set(t, s, fmt.Sprintf("a/%06d", i), value())
		if i%8 == 0 {
			set(t, s, fmt.Sprintf("b/%06d", i), value())
		}
	}
	flush(t, s)
	if err := s.Expire([]byte("a/"), []byte("a0")); err != nil {
		t.Fatal(err)
	}
	_, _, dead, nums, err := s.deadSpan(nil)
	if err != nil || dead < reclaimMin || len(nums) != 1 {
		t.Fatalf("dead bytes after the expiry: %d in %v, %v; want a table's", dead, nums, err)
	}
	checkpointT(t, s, root, 1)
	r := s.reclaiming
	if r == nil {
		t.Fatal("the barrier after the expiry started no reclaim")
	}
	<-r.done
	for n := 2; n < 5; n++ {
		checkpointT(t, s, root, n)
		if s.reclaiming != nil {
			t.Fatalf("barrier %d started a reclaim of the table moved down by the last one", n)
		}
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
