package state

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/connector-dev/connector/internal/keygroup"
)

// rescaleEnv runs the workers of a stateful job the way the runtime does:
// each record's key picks a key group, the key group a worker; every
// generation of workers restores from the chains of the previous one.
type rescaleEnv struct {
	t     *testing.T
	root  string
	max   int
	rng   *rand.Rand
	gen   int               // the workers' generation, for directory names
	model map[string]string // what the workers' state holds, together
	saved map[string]string // the model at the last checkpoint
}

// rescaleFullAfter is the workers' FullSnapshotAfter: a bulk load outgrows
// it (a full snapshot), 40 writes between barriers do not (a changelog).
const rescaleFullAfter = 4 << 10

// open starts p workers, each restored from chains, the snapshots of the
// previous generation's workers (len(chains) of them), and resets the model
// to the state at their barrier.
func (e *rescaleEnv) open(p int, chains []Chain) []*Store {
	e.t.Helper()
	e.gen++
	var srcs []Restore
	for i, c := range chains {
		srcs = append(srcs, Restore{Chain: c, KeyGroups: keygroup.RangeOf(e.max, len(chains), i)})
	}
	e.model = maps.Clone(e.saved)
	stores := make([]*Store, p)
	for w := range stores {
		stores[w] = openCfg(e.t, Config{Dir: filepath.Join(e.root, "work", fmt.Sprintf("gen-%d-worker-%d", e.gen, w)),
			MaxParallelism: e.max, KeyGroups: keygroup.RangeOf(e.max, p, w), Restore: srcs, FullSnapshotAfter: rescaleFullAfter})
	}
	return stores
}

// write makes n random sets (new keys and overwrites) and deletes, each on
// the worker that owns the key's key group.
func (e *rescaleEnv) write(stores []*Store, n int) {
	e.t.Helper()
	for range n {
		k := fmt.Sprintf("key-%d", e.rng.IntN(300))
		kg := keygroup.Of([]byte(k), e.max)
		s := stores[keygroup.OperatorOf(kg, e.max, len(stores))]
		if err := s.SetKeyGroup(kg); err != nil {
			e.t.Fatal(err)
		}
		if e.rng.IntN(4) == 0 {
			del(e.t, s, k)
			delete(e.model, k)
			continue
		}
		v := fmt.Sprintf("gen%d-%d", e.gen, e.rng.IntN(1e9))
		set(e.t, s, k, v)
		e.model[k] = v
	}
}

// checkpoint takes barrier n on every worker and returns their chains.
func (e *rescaleEnv) checkpoint(stores []*Store, n int) []Chain {
	e.t.Helper()
	chains := make([]Chain, len(stores))
	for w, s := range stores {
		chains[w] = checkpointT(e.t, s, filepath.Join(e.root, fmt.Sprintf("gen-%d", e.gen), fmt.Sprint(w)), n)
	}
	e.saved = maps.Clone(e.model)
	return chains
}

// check compares every worker's state with the model's keys in its key
// groups, each key stored under its own key group.
func (e *rescaleEnv) check(stores []*Store) {
	e.t.Helper()
	for w, s := range stores {
		for kg, kv := range grouped(e.t, s) {
			for k := range kv {
				if want := keygroup.Of([]byte(k), e.max); kg != want {
					e.t.Fatalf("worker %d: %q stored in key group %d, not its own %d", w, k, kg, want)
				}
			}
		}
		want := map[string]string{}
		for k, v := range e.model {
			if s.KeyGroups().Contains(keygroup.Of([]byte(k), e.max)) {
				want[k] = v
			}
		}
		wantContents(e.t, s, want)
	}
}

// twoWorkersCheckpointed is a rescaleEnv of max parallelism 128 (its
// random writes seeded with seed1, seed2) whose 2 workers made 600 writes
// and took checkpoint 1, a full snapshot each; it returns their chains,
// the workers closed.
func twoWorkersCheckpointed(t *testing.T, seed1, seed2 uint64) (*rescaleEnv, []Chain) {
	t.Helper()
	e := &rescaleEnv{t: t, root: t.TempDir(), max: 128, rng: rand.New(rand.NewPCG(seed1, seed2)), saved: map[string]string{}}
	stores := e.open(2, nil)
	e.write(stores, 600)
	chains := e.checkpoint(stores, 1)
	closeAll(t, stores)
	return e, chains
}

func closeAll(t testing.TB, stores []*Store) {
	t.Helper()
	for _, s := range stores {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A job with 2 workers, whose chains hold a full snapshot and changelogs
// (or, for a young job, changelogs only), is restarted with 3 workers, then
// 1, then 4, then 4 again: every time each worker holds exactly the keys of
// its key groups as they were at the last barrier, the first checkpoint
// after a rescale is a full snapshot of the new layout, and the next ones
// extend it.
func TestRescaledRestoresHoldExactlyTheirKeyGroups(t *testing.T) {
	for _, tc := range []struct {
		max  int
		full bool // the 2 workers' chains start with a full snapshot
	}{{128, true}, {128, false}, {8, true}, {8, false}} {
		t.Run(fmt.Sprintf("max=%d/full=%v", tc.max, tc.full), func(t *testing.T) {
			e := &rescaleEnv{t: t, root: t.TempDir(), max: tc.max, rng: rand.New(rand.NewPCG(uint64(tc.max), 7)), saved: map[string]string{}}
			stores := e.open(2, nil)
			n := 0
			if tc.full {
				e.write(stores, 600)
				n++
				for w, c := range e.checkpoint(stores, n) {
					if c.Base == "" || len(c.Changelogs) != 0 {
						t.Fatalf("worker %d's chain after the bulk load = %+v, want a full snapshot", w, c)
					}
				}
			}
			var chains []Chain
			for range 3 {
				e.write(stores, 40)
				n++
				chains = e.checkpoint(stores, n)
			}
			for w, c := range chains {
				if (c.Base != "") != tc.full || len(c.Changelogs) != 3 {
					t.Fatalf("worker %d's chain = %+v, want 3 changelogs (after a full snapshot: %v)", w, c, tc.full)
				}
			}
			e.write(stores, 30) // after the barrier: not restored
			for _, p := range []int{3, 1, 4} {
				closeAll(t, stores)
				stores = e.open(p, chains)
				e.check(stores)
				e.write(stores, 60)
				n++
				chains = e.checkpoint(stores, n)
				for w, c := range chains {
					if c.Base == "" || len(c.Changelogs) != 0 {
						t.Fatalf("parallelism %d, worker %d: first chain after the rescale = %+v, want a full snapshot alone", p, w, c)
					}
				}
				e.write(stores, 40)
				n++
				next := e.checkpoint(stores, n)
				for w, c := range next {
					if c.Base != chains[w].Base || len(c.Changelogs) != 1 {
						t.Fatalf("parallelism %d, worker %d: chain = %+v, want %s and one changelog", p, w, c, chains[w].Base)
					}
				}
				chains = next
				e.write(stores, 30)
			}
			closeAll(t, stores)
			stores = e.open(4, chains)
			e.check(stores)
			e.write(stores, 40)
			for w, c := range e.checkpoint(stores, n+1) {
				if c.Base != chains[w].Base || len(c.Changelogs) != 2 {
					t.Fatalf("worker %d restored at the same parallelism: chain = %+v, want %+v extended", w, c, chains[w])
				}
			}
		})
	}
}

// Restored at the same parallelism, a worker's full snapshot is hard-linked
// into its working directory, not copied; a split hard-links the source
// with the largest share too.
func TestRestoreHardLinksTheFullSnapshot(t *testing.T) {
	e, chains := twoWorkersCheckpointed(t, 3, 4)
	for _, p := range []int{2, 3} {
		stores := e.open(p, chains)
		e.check(stores)
		if n := linkedSSTs(t, chains[0].Base, stores[0].dir); n == 0 {
			t.Errorf("parallelism %d: worker 0's working dir shares no sstable with %s", p, chains[0].Base)
		}
	}
}

// linkedSSTs counts the sstables of dir that are hard links to base's.
func linkedSSTs(t *testing.T, base, dir string) int {
	t.Helper()
	n := 0
	for name := range fileSizes(t, base) {
		a, errA := os.Stat(filepath.Join(base, name))
		b, errB := os.Stat(filepath.Join(dir, name))
		if immutable(name) && errA == nil && errB == nil && os.SameFile(a, b) {
			n++
		}
	}
	return n
}

// A worker whose key groups no source held starts empty, and its chain
// starts from nothing: no old chain is extended.
func TestRestoreOfKeyGroupsNoSourceHeldIsEmpty(t *testing.T) {
	e := &rescaleEnv{t: t, root: t.TempDir(), max: 128, rng: rand.New(rand.NewPCG(5, 6)), saved: map[string]string{}}
	stores := e.open(2, nil)
	e.write(stores, 200)
	chains := e.checkpoint(stores, 1)
	s := openCfg(t, Config{Dir: filepath.Join(e.root, "other"), MaxParallelism: 128, KeyGroups: keygroup.RangeOf(128, 2, 1),
		Restore: []Restore{{Chain: chains[0], KeyGroups: keygroup.RangeOf(128, 2, 0)}}})
	wantContents(t, s, map[string]string{})
	if err := s.SetKeyGroup(100); err != nil {
		t.Fatal(err)
	}
	set(t, s, "k", "v")
	if c := checkpointT(t, s, filepath.Join(e.root, "other-chk"), 2); c.Base != "" || len(c.Changelogs) != 1 {
		t.Fatalf("chain = %+v, want a changelog of its own", c)
	}
}

// Restoring the same sources twice, with writes, checkpoints and
// compactions in between, gives the same state: nothing restored from is
// modified, and the scratch copies are gone.
func TestRescaledRestoreLeavesItsSourcesUnchanged(t *testing.T) {
	e := &rescaleEnv{t: t, root: t.TempDir(), max: 128, rng: rand.New(rand.NewPCG(7, 8)), saved: map[string]string{}}
	stores := e.open(2, nil)
	e.write(stores, 600)
	e.checkpoint(stores, 1)
	e.write(stores, 40)
	chains := e.checkpoint(stores, 2)
	closeAll(t, stores)
	sources := filepath.Join(e.root, "gen-1")
	before, barrier := digests(t, sources), e.saved
	for round := range 2 {
		e.saved = maps.Clone(barrier)
		stores := e.open(3, chains)
		e.check(stores)
		for _, s := range stores {
			if _, err := os.Stat(s.dir + ".rescale"); !os.IsNotExist(err) {
				t.Fatalf("round %d: the scratch dir of %s is still there: %v", round, s.dir, err)
			}
		}
		for range 20 { // enough for flushes and compactions
			e.write(stores, 300)
			for _, s := range stores {
				flush(t, s)
			}
		}
		e.checkpoint(stores, 3)
		closeAll(t, stores)
		if after := digests(t, sources); !maps.Equal(before, after) {
			t.Fatalf("round %d: the restored files changed", round)
		}
	}
}

// digests maps every file under dir to a hash of its contents.
func digests(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = sha256.Sum256(b)
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("walk %s: %v (%d files)", dir, err, len(out))
	}
	return out
}

// Full snapshots written before the key group moved to the end of keys
// (layout 1: key group first) are restored, their keys rewritten: at the
// same parallelism, where the restored chain goes on (the next checkpoint
// is a changelog), and at another.
func TestFullSnapshotsOfTheFormerKeyLayoutAreRestored(t *testing.T) {
	e, chains := twoWorkersCheckpointed(t, 5, 6)
	for _, c := range chains {
		if c.Base == "" {
			t.Fatalf("chain %v has no full snapshot to rewrite", c)
		}
		toLayout1(t, c.Base)
	}
	atChains := maps.Clone(e.saved)
	for _, p := range []int{2, 3} {
		e.saved = maps.Clone(atChains)
		stores := e.open(p, chains)
		e.check(stores)
		e.write(stores, 40)
		next := e.checkpoint(stores, 2)
		if p == 2 && (next[0].Base != chains[0].Base || len(next[0].Changelogs) != len(chains[0].Changelogs)+1) {
			t.Errorf("same parallelism: chain %v does not extend the restored %v", next[0], chains[0])
		}
		closeAll(t, stores)
		stores = e.open(p, next)
		e.check(stores)
		closeAll(t, stores)
	}
}

// toLayout1 rewrites the full snapshot in dir the way versions before
// layout 2 wrote it: each state key as key group, then key; no layout key.
func toLayout1(t *testing.T, dir string) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := stateSpan(currentLayout)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		kg, key, ok := decodeKey(currentLayout, it.Key())
		if !ok {
			t.Fatalf("key %q", it.Key())
		}
		old := append(binary.BigEndian.AppendUint16(nil, uint16(kg)), key...)
		if err := b.Set(old, it.Value(), nil); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("%s holds no state key", dir)
	}
	for _, err := range []error{b.DeleteRange(lo, hi, nil), b.Delete(layoutKey, nil), b.Commit(pebble.Sync), db.Flush(), db.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
