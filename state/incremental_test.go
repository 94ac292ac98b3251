package state

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// checkpointT runs both parts of a Checkpoint for barrier n under root.
func checkpointT(t testing.TB, s *Store, root string, n int) Chain {
	t.Helper()
	p, err := s.Checkpoint(fullDir(root, n), changelogPath(root, n))
	if err != nil {
		t.Fatalf("Checkpoint %d: %v", n, err)
	}
	c, err := p.Wait()
	if err != nil {
		t.Fatalf("Checkpoint %d: Wait: %v", n, err)
	}
	return c
}

func fullDir(root string, n int) string { return filepath.Join(root, fmt.Sprintf("chk-%d", n), "w") }
func changelogPath(root string, n int) string {
	return filepath.Join(root, fmt.Sprintf("chk-%d", n), "w.changelog")
}

// openChain restores c into a fresh working directory under root.
func openChain(t testing.TB, root string, c Chain) *Store {
	t.Helper()
	return openCfg(t, Config{Dir: filepath.Join(root, fmt.Sprintf("restore-%d", rand.Int())), RestoreFrom: c.Base, Changelogs: c.Changelogs})
}

// Random sets and deletes over 40 barriers, with a FullSnapshotAfter small
// enough that full snapshots run in the background (while the next writes
// go on) and become the base. Every barrier's chain restores exactly the
// state at that barrier, and the files it lists all exist.
func TestCheckpointChainsRestoreExactlyTheBarrierState(t *testing.T) {
	root := t.TempDir()
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FullSnapshotAfter: 4 << 10})
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]string{}
	type taken struct {
		chain Chain
		want  map[string]string
	}
	var all []taken
	bases := map[string]bool{}
	for n := 1; n <= 40; n++ {
		for i := range 50 + rng.IntN(200) {
			k := fmt.Sprintf("k%04d", rng.IntN(600))
			if rng.IntN(5) == 0 {
				del(t, s, k)
				delete(model, k)
				continue
			}
			v := fmt.Sprintf("v%d-%d", n, i)
			set(t, s, k, v)
			model[k] = v
		}
		p, err := s.Checkpoint(fullDir(root, n), changelogPath(root, n))
		if err != nil {
			t.Fatalf("Checkpoint %d: %v", n, err)
		}
		want := maps.Clone(model)
		// Writes after the barrier, before its changelog is written: not
		// in this snapshot.
		for i := range 20 {
			k := fmt.Sprintf("k%04d", rng.IntN(600))
			set(t, s, k, fmt.Sprintf("after%d-%d", n, i))
			model[k] = fmt.Sprintf("after%d-%d", n, i)
		}
		c, err := p.Wait()
		if err != nil {
			t.Fatalf("Wait %d: %v", n, err)
		}
		all = append(all, taken{c, want})
		bases[c.Base] = true
	}
	if len(bases) < 3 {
		t.Fatalf("only %d distinct bases over 40 barriers: background full snapshots were never adopted", len(bases))
	}
	for i, tk := range all {
		for _, f := range tk.chain.Files() {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("barrier %d: chain file missing: %v", i+1, err)
			}
		}
		wantContents(t, openChain(t, root, tk.chain), tk.want)
	}
}

// A restored chain goes on: the next snapshots extend it, and restore.
func TestChainGoesOnAfterRestore(t *testing.T) {
	root := t.TempDir()
	s := openT(t, filepath.Join(root, "a"), "")
	set(t, s, "a", "1")
	checkpointT(t, s, root, 1)
	set(t, s, "b", "2")
	c2 := checkpointT(t, s, root, 2)
	if c2.Base != "" || len(c2.Changelogs) != 2 {
		t.Fatalf("chain = %+v, want no base and 2 changelogs", c2)
	}

	r := openChain(t, root, c2)
	set(t, r, "c", "3")
	del(t, r, "a")
	c3 := checkpointT(t, r, root, 3)
	if !slices.Equal(c3.Changelogs[:2], c2.Changelogs) || len(c3.Changelogs) != 3 {
		t.Fatalf("chain after restore = %v, want %v plus one", c3.Changelogs, c2.Changelogs)
	}
	wantContents(t, openChain(t, root, c3), map[string]string{"b": "2", "c": "3"})
}

// Writes that outgrow FullSnapshotAfter between two barriers are not kept:
// the next barrier takes a full snapshot synchronously, a chain of its own.
func TestOversizedDeltaGivesAFullSnapshot(t *testing.T) {
	root := t.TempDir()
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FullSnapshotAfter: 1 << 10})
	want := map[string]string{}
	for i := range 200 {
		k := fmt.Sprintf("key-%03d", i)
		set(t, s, k, "value")
		want[k] = "value"
	}
	c := checkpointT(t, s, root, 1)
	if c.Base != fullDir(root, 1) || len(c.Changelogs) != 0 {
		t.Fatalf("chain = %+v, want the full snapshot %s alone", c, fullDir(root, 1))
	}
	wantContents(t, openChain(t, root, c), want)
	set(t, s, "small", "x")
	want["small"] = "x"
	c = checkpointT(t, s, root, 2)
	if c.Base != fullDir(root, 1) || len(c.Changelogs) != 1 {
		t.Fatalf("chain = %+v, want the full snapshot and one changelog", c)
	}
	wantContents(t, openChain(t, root, c), want)
}

// A changelog that cannot be written fails the checkpoint, leaves no file,
// and the next checkpoint's changelog carries its writes.
func TestFailedChangelogIsCarriedByTheNext(t *testing.T) {
	for name, kind := range map[string]errorfs.OpKind{
		"create": errorfs.OpCreate, "write": errorfs.OpFileWrite, "sync": errorfs.OpFileSync, "dirsync": errorfs.OpFileSync,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			bad := changelogPath(root, 2)
			if name == "dirsync" {
				bad = filepath.Dir(bad)
			}
			fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind == kind && op.Path == bad {
					return errorfs.ErrInjected
				}
				return nil
			}))
			s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FS: fs})
			set(t, s, "a", "1")
			checkpointT(t, s, root, 1)
			set(t, s, "b", "2")
			del(t, s, "a")
			p, err := s.Checkpoint(fullDir(root, 2), changelogPath(root, 2))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Wait(); !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Wait = %v, want the injected error", err)
			}
			if _, err := os.Stat(changelogPath(root, 2)); !os.IsNotExist(err) {
				t.Fatalf("failed changelog left behind: %v", err)
			}
			set(t, s, "c", "3")
			c := checkpointT(t, s, root, 3)
			if len(c.Changelogs) != 2 {
				t.Fatalf("chain = %v, want changelogs 1 and 3", c.Changelogs)
			}
			wantContents(t, openChain(t, root, c), map[string]string{"b": "2", "c": "3"})
		})
	}
}

// A changelog cut short, or with a flipped byte, is refused at restore.
func TestDamagedChangelogIsRefused(t *testing.T) {
	root := t.TempDir()
	s := openT(t, filepath.Join(root, "a"), "")
	for i := range 50 {
		set(t, s, fmt.Sprintf("k%d", i), "v")
	}
	c := checkpointT(t, s, root, 1)
	path := c.Changelogs[0]
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"cut":     good[:len(good)-7],
		"flipped": append(append([]byte{}, good[:20]...), append([]byte{good[20] ^ 1}, good[21:]...)...),
		"empty":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(Config{Dir: filepath.Join(root, "r-"+name), Changelogs: c.Changelogs}, testLog(t))
			if !errors.Is(err, errBadChangelog) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open with a %s changelog = %v, want errBadChangelog naming the file", name, err)
			}
		})
	}
}
