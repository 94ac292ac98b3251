package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/internal/keygroup"
)

// Review tests (keyed state over time and across changes). Each says
// whether it passed when written.

// expiryEnv is a rescaleEnv whose workers also expire ranges of keys (a
// dedup's time buckets: "b/<bucket>/<key>"). Its model tells apart the keys
// whose value is certain (live) from those an Expire removed since their
// last write (ghosts): a restore may bring a ghost back (Expire is not in
// the changelogs), but only with the value it had when it was expired,
// never an older one, and only in its own key group. A Delete is logged:
// a deleted key never comes back.
type expiryEnv struct {
	t     *testing.T
	root  string
	max   int
	rng   *rand.Rand
	gen   int
	live  map[string]string
	ghost map[string]string
	saved [2]map[string]string // live and ghost at the last barrier
}

func (e *expiryEnv) open(p int, chains []Chain) []*Store {
	e.t.Helper()
	e.gen++
	var srcs []Restore
	for i, c := range chains {
		srcs = append(srcs, Restore{Chain: c, KeyGroups: keygroup.RangeOf(e.max, len(chains), i)})
	}
	e.live, e.ghost = maps.Clone(e.saved[0]), maps.Clone(e.saved[1])
	stores := make([]*Store, p)
	for w := range stores {
		stores[w] = openCfg(e.t, Config{Dir: filepath.Join(e.root, "work", fmt.Sprintf("gen-%d-worker-%d", e.gen, w)),
			MaxParallelism: e.max, KeyGroups: keygroup.RangeOf(e.max, p, w), Restore: srcs, FullSnapshotAfter: rescaleFullAfter})
	}
	return stores
}

// write makes n random sets, deletes and (one in 15) expiries of a bucket
// on every worker, as a dedup's expiry is: the bucket's keys of every key
// group the worker owns.
func (e *expiryEnv) write(stores []*Store, n int) {
	e.t.Helper()
	for range n {
		b := e.rng.IntN(6)
		if e.rng.IntN(15) == 0 {
			lo, hi := fmt.Sprintf("b/%d/", b), fmt.Sprintf("b/%d0", b)
			for _, s := range stores {
				if err := s.Expire([]byte(lo), []byte(hi)); err != nil {
					e.t.Fatal(err)
				}
			}
			for k, v := range e.live {
				if k >= lo && k < hi {
					e.ghost[k] = v
					delete(e.live, k)
				}
			}
			continue
		}
		k := fmt.Sprintf("b/%d/key-%d", b, e.rng.IntN(60))
		kg := keygroup.Of([]byte(k), e.max)
		s := stores[keygroup.OperatorOf(kg, e.max, len(stores))]
		if err := s.SetKeyGroup(kg); err != nil {
			e.t.Fatal(err)
		}
		delete(e.ghost, k)
		if e.rng.IntN(5) == 0 {
			del(e.t, s, k)
			delete(e.live, k)
			continue
		}
		v := fmt.Sprintf("gen%d-%d", e.gen, e.rng.IntN(1e9))
		set(e.t, s, k, v)
		e.live[k] = v
	}
}

// checkpoint takes barrier n on every worker, waits for any background
// full snapshot (so that the next barrier adopts it: the same chains at
// every run), and returns the chains.
func (e *expiryEnv) checkpoint(stores []*Store, n int) []Chain {
	e.t.Helper()
	chains := make([]Chain, len(stores))
	for w, s := range stores {
		chains[w] = checkpointT(e.t, s, filepath.Join(e.root, fmt.Sprintf("gen-%d", e.gen), fmt.Sprint(w)), n)
		if s.bg != nil {
			<-s.bg.done
		}
	}
	e.saved = [2]map[string]string{maps.Clone(e.live), maps.Clone(e.ghost)}
	return chains
}

// check compares each worker with the model: every live key of its key
// groups with its value, each ghost absent or with its value at expiry,
// nothing else, each key in its own key group.
func (e *expiryEnv) check(stores []*Store) (resurrected int) {
	e.t.Helper()
	for w, s := range stores {
		for kg, kv := range grouped(e.t, s) {
			for k := range kv {
				if want := keygroup.Of([]byte(k), e.max); kg != want {
					e.t.Fatalf("worker %d %s: %q stored in key group %d, not its own %d", w, s.KeyGroups(), k, kg, want)
				}
			}
		}
		got := contents(e.t, s)
		for k, v := range e.live {
			if !s.KeyGroups().Contains(keygroup.Of([]byte(k), e.max)) {
				continue
			}
			if g, ok := got[k]; !ok || g != v {
				e.t.Fatalf("worker %d %s: live key %q = %q (present %v), want %q", w, s.KeyGroups(), k, g, ok, v)
			}
		}
		for k, g := range got {
			if _, ok := e.live[k]; ok {
				continue
			}
			v, ok := e.ghost[k]
			switch {
			case !ok:
				e.t.Fatalf("worker %d %s: key %q = %q is neither live nor expired (deleted, or never written)", w, s.KeyGroups(), k, g)
			case g != v:
				e.t.Fatalf("worker %d %s: expired key %q came back as %q, not its value at expiry %q", w, s.KeyGroups(), k, g, v)
			}
			resurrected++
		}
	}
	return resurrected
}

// Written by a review, passing: a job whose workers set, delete and expire
// keys, restarted at parallelism 2 -> 3 -> 1 -> 2 -> 2 (same) -> 4, with
// background full snapshots adopted on the way: every worker holds every
// live key of its key groups exactly, nothing deleted, an expired key
// only with the value it had when it expired, and no key outside its own
// key group.
func TestReviewStateRescalesWithExpiryLoseAndResurrectNothingWrong(t *testing.T) {
	for _, max := range []int{128, 8} {
		t.Run(fmt.Sprintf("max=%d", max), func(t *testing.T) {
			e := &expiryEnv{t: t, root: t.TempDir(), max: max, rng: rand.New(rand.NewPCG(uint64(max), 11)),
				saved: [2]map[string]string{{}, {}}}
			stores := e.open(2, nil)
			n := 0
			var chains []Chain
			for range 6 {
				e.write(stores, 150)
				n++
				chains = e.checkpoint(stores, n)
			}
			resurrected := 0
			for _, p := range []int{3, 1, 2, 2, 4} {
				e.write(stores, 40) // after the barrier: lost with the crash
				closeAll(t, stores)
				stores = e.open(p, chains)
				resurrected += e.check(stores)
				for range 5 {
					e.write(stores, 120)
					n++
					chains = e.checkpoint(stores, n)
				}
			}
			closeAll(t, stores)
			stores = e.open(3, chains)
			resurrected += e.check(stores)
			if len(e.ghost) == 0 {
				t.Fatal("no key was expired: the test proves nothing")
			}
			t.Logf("%d expired keys came back over the restores (allowed)", resurrected)
		})
	}
}

// Written by a review, passing: a full snapshot taken after an Expire cut
// a table in two (a virtual table: its file still holds the expired keys)
// survives a crash that drops every unsynced write, and restores, at the
// same parallelism and split in two, without the expired keys.
func TestReviewStateSnapshotOfAnExpiredTableSurvivesACrashAndRescales(t *testing.T) {
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true }
	t.Cleanup(func() { testPebbleOptions = nil })
	mem := vfs.NewCrashableMem()
	if err := fsutil.MkdirAll(mem, "/state"); err != nil {
		t.Fatal(err)
	}
	const max = 8
	all := keygroup.Range{Start: 0, End: max}
	s := openCfg(t, Config{Dir: "/state/work/worker-0", FS: mem, MaxParallelism: max, KeyGroups: all})
	want := map[string]string{}
	for i := range 400 {
		for _, b := range []string{"b/1/", "b/2/"} { // one table straddles both buckets
			k := fmt.Sprintf("%s%04d", b, i)
			if err := s.SetKeyGroup(keygroup.Of([]byte(k), max)); err != nil {
				t.Fatal(err)
			}
			set(t, s, k, "v"+k)
			if b == "b/2/" {
				want[k] = "v" + k
			}
		}
	}
	flush(t, s)
	if err := s.Expire([]byte("b/1/"), []byte("b/10")); err != nil {
		t.Fatal(err)
	}
	if v := s.db.Metrics().NumVirtual(); v == 0 {
		t.Fatal("the expiry left no virtual table: the test proves nothing")
	}
	h := snapshot(t, s, "/state/chk-1/worker-0")
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	same := openCfg(t, Config{Dir: "/state/work/restored", FS: crashed, MaxParallelism: max, KeyGroups: all,
		Restore: []Restore{{Chain: Chain{Base: h.Dir}, KeyGroups: all}}})
	wantContents(t, same, want)
	union := map[string]string{}
	for w := range 2 {
		part := openCfg(t, Config{Dir: fmt.Sprintf("/state/work/split-%d", w), FS: crashed, MaxParallelism: max,
			KeyGroups: keygroup.RangeOf(max, 2, w), Restore: []Restore{{Chain: Chain{Base: h.Dir}, KeyGroups: all}}})
		for k, v := range contents(t, part) {
			union[k] = v
		}
	}
	if !maps.Equal(union, want) {
		t.Fatalf("split in two, the workers hold %d keys together, want %d (the expired ones gone)", len(union), len(want))
	}
}
