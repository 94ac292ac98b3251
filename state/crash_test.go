package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/fsutil"
)

// TestSnapshotsSurviveACrashOnceHandedOut: a full snapshot, once Snapshot
// returned, and a changelog, once its Pending's Wait returned, survive a
// crash that drops every unsynced write (a crash-cloned MemFS): restoring
// the chain after the crash gives the state at the barrier. This is what
// the checkpoint relies on, whatever the version of Pebble underneath.
func TestSnapshotsSurviveACrashOnceHandedOut(t *testing.T) {
	mem, s, want := crashableStore(t)
	h := snapshot(t, s, "/state/full/one")
	atSnapshot := maps.Clone(want)
	for i := range 50 {
		k := fmt.Sprintf("k%03d", i)
		set(t, s, k, "changed")
		want[k] = "changed"
	}
	p, err := s.Checkpoint("/state/full/two", "/state/chk-1/worker-0.changelog")
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Changelogs) != 1 {
		t.Fatalf("chain %+v: want one changelog", c)
	}
	set(t, s, "k000", "after the barrier") // unsynced, not in the chain

	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	full := openCfg(t, Config{Dir: "/state/work/worker-1", FS: crashed, Restore: whole(Chain{Base: h.Dir})})
	if got := contents(t, full); !maps.Equal(got, atSnapshot) {
		t.Errorf("after the crash the full snapshot restores %d keys, want %d", len(got), len(atSnapshot))
	}
	chain := openCfg(t, Config{Dir: "/state/work/worker-2", FS: crashed, Restore: whole(c)})
	if got := contents(t, chain); !maps.Equal(got, want) {
		t.Errorf("after the crash the changelog chain restores %d keys, want %d (k000=%q, want %q)", len(got), len(want), got["k000"], want["k000"])
	}
}

// The same with the changelog streamed while its delta filled, and a crash
// while the next delta's stream is under way: the chain restores the
// barrier's state, and a stream's file the crash left is removed by the
// next Open in that directory.
func TestStreamedChangelogSurvivesACrashAndItsLeftoversGo(t *testing.T) {
	defer func(n int) { deltaChunk = n }(deltaChunk)
	deltaChunk = 128
	mem, s, want := crashableStore(t)
	c := checkpointT(t, s, "/state", 1)
	if s.streams == 0 || len(c.Changelogs) != 1 {
		t.Fatalf("%d streams, chain %+v: want the changelog streamed", s.streams, c)
	}
	for i := range 100 { // the next delta, streamed, never checkpointed
		set(t, s, fmt.Sprintf("k%03d", i), "after the barrier")
	}
	if s.stream == nil {
		t.Fatal("no stream under way at the crash")
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(1, 2))})
	// What the stream under way left, if the crash kept it (whether it did
	// depends on how far its goroutine got): one for certain.
	f, err := crashed.Create("/state/work/worker-0.changelog-9", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(header(128)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	restored := openCfg(t, Config{Dir: "/state/work/worker-0", FS: crashed, Restore: whole(c)})
	if got := contents(t, restored); !maps.Equal(got, want) {
		t.Errorf("after the crash the streamed chain restores %d keys, want %d", len(got), len(want))
	}
	if left := streamFiles(t, crashed, "/state/work/worker-0"); len(left) > 0 {
		t.Errorf("stream files left after Open: %v", left)
	}
}

// crashableStore opens a Store in /state/work/worker-0 of a crashable
// MemFS and writes 300 keys; want is what it holds.
func crashableStore(t *testing.T) (*vfs.MemFS, *Store, map[string]string) {
	mem := vfs.NewCrashableMem()
	if err := fsutil.MkdirAll(mem, "/state"); err != nil {
		t.Fatal(err)
	}
	s := openCfg(t, Config{Dir: "/state/work/worker-0", FS: mem})
	want := map[string]string{}
	for i := range 300 {
		k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)
		set(t, s, k, v)
		want[k] = v
	}
	return mem, s, want
}

// A Pending whose Store was closed before its Wait, while the next Store
// of the same directory opened and streams its own changelog, fails its
// Wait: it never renames the new Store's stream under way into its
// changelog (whose stream files had the same names, each Open numbering
// them from 1, and the Wait reported a checkpoint that did not restore).
func TestAPendingOfAClosedStoreNeverTakesTheNextStoresStream(t *testing.T) {
	defer func(n int) { deltaChunk = n }(deltaChunk)
	deltaChunk = 128
	mem, s, _ := crashableStore(t)
	if s.stream == nil {
		t.Fatal("no stream under way: the test needs the first Store's changelog streamed")
	}
	p, err := s.Checkpoint(fullDir("/state", 1), changelogPath("/state", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	next := openCfg(t, Config{Dir: "/state/work/worker-0", FS: mem})
	for i := range 300 {
		set(t, next, fmt.Sprintf("n%03d", i), "the next Store's")
	}
	if next.stream == nil {
		t.Fatal("no stream under way in the next Store")
	}
	c, err := p.Wait()
	if err == nil {
		restored := openCfg(t, Config{Dir: "/state/restored", FS: mem, Restore: whole(c)})
		t.Fatalf("the closed Store's Wait returned %+v and no error; its chain restores %d keys", c, len(contents(t, restored)))
	}
	// The next Store's own checkpoint is whole.
	restored := openCfg(t, Config{Dir: "/state/restored", FS: mem, Restore: whole(checkpointT(t, next, "/state", 2))})
	if got := len(contents(t, restored)); got != 300 {
		t.Errorf("the next Store's checkpoint restores %d keys, want 300", got)
	}
}
