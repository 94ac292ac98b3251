package state

import (
	"fmt"
	"maps"
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
