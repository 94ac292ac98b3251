package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"
)

// modelKV is one worker's view of some key groups of the state a history
// keeps: every Set is remembered, for the keys a restore brings back.
type modelKV struct {
	t    *testing.T
	kg   uint16
	own  map[uint16]*MemKV
	hist map[uint16]map[string][]byte // every Set, for resurrection
	// last is the value the last Get returned: the next call scribbles
	// over it (the KV contract: valid until the next call).
	last []byte
}

// spoil scribbles over the value the last Get returned.
func (kv *modelKV) spoil() {
	for i := range kv.last {
		kv.last[i] = 0xA5
	}
	kv.last = nil
}

// in is the current key group's store: the key group must be one of the
// worker's.
func (kv *modelKV) in() *MemKV {
	m := kv.own[kv.kg]
	if m == nil {
		kv.t.Fatalf("access to key group %d, not the worker's", kv.kg)
	}
	return m
}

func (kv *modelKV) KeyGroup() int            { return int(kv.kg) }
func (kv *modelKV) SetKeyGroup(kg int) error { kv.spoil(); kv.kg = uint16(kg); return nil }
func (kv *modelKV) Get(k []byte) ([]byte, bool, error) {
	kv.spoil()
	v, ok, err := kv.in().Get(k)
	if ok {
		v = append([]byte(nil), v...)
		kv.last = v
	}
	return v, ok, err
}
func (kv *modelKV) Set(k, v []byte) error {
	kv.spoil()
	kv.hist[kv.kg][string(k)] = append([]byte(nil), v...)
	return kv.in().Set(k, v)
}
func (kv *modelKV) Delete(k []byte) error { kv.spoil(); return kv.in().Delete(k) }
func (kv *modelKV) checkBound(op string, b []byte) {
	for _, m := range kv.own {
		for k := range m.m {
			if len(k) < len(b) && bytes.HasPrefix(b, []byte(k)) {
				kv.t.Fatalf("%s bound %q has key %q as proper prefix", op, b, k)
			}
		}
	}
}
func (kv *modelKV) Expire(lo, hi []byte) error {
	kv.spoil()
	kv.checkBound("expire", lo)
	kv.checkBound("expire", hi)
	if bytes.Compare(lo, hi) > 0 {
		kv.t.Fatalf("expire lo>hi %q %q", lo, hi)
	}
	for _, m := range kv.own {
		m.Expire(lo, hi)
	}
	return nil
}
func (kv *modelKV) Scan(lo, hi []byte, fn func(k, v []byte) error) error {
	kv.spoil()
	kv.checkBound("scan", lo)
	kv.checkBound("scan", hi)
	for _, m := range kv.own {
		if err := m.Scan(lo, hi, fn); err != nil {
			return err
		}
	}
	return nil
}

type sighting struct {
	kg  uint16
	val string
	f   int64
	run int
}

var modelCanaries = []string{"transform/dedup/d-/x", "transform/dedup/d./x", "transform/dedup/d0/x", "transform/dedup/dd/x", "transform/dedup/c/x", "transform/dedup/e/\x00\x01"}

// TestDedupAgainstAModel runs random histories of a dedup and checks each
// decision against the rule it implements: a record is dropped only if a
// kept record of the same key group and value was first seen within the
// TTL before it (at record time), and is always dropped when such a
// sighting is one the dedup guarantees to remember (within two TTLs of
// the newest record time, with the ttl of every run since no shorter). A
// history is 2 to 7 runs, each a new Dedup per worker on the state the
// runs before left: a ttl drawn per run (changes back and forth), key
// groups reassigned to 1-3 workers (rescales that merge and split), records
// up to a TTL out of order, values in several key groups, tiny index
// capacities (by-value entries), stale-bucket sweeps, keys an expiry
// removed brought back (as a restore may), state of the previous versions
// (keys without width, unbucketed entries). At the end, far ahead in time,
// only each key group's last entry may be left. Every Expire and Scan
// bound is checked against the KV's rule (no key a proper prefix of it),
// and neighbouring namespaces' keys must survive. Deterministic: seeds
// 1..N (DEDUP_MODEL_ITERS=N, 300 by default; DEDUP_MODEL_SEED=S runs one).
func TestDedupAgainstAModel(t *testing.T) {
	iters, seed0 := 300, int64(1)
	if s := os.Getenv("DEDUP_MODEL_ITERS"); s != "" {
		iters, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("DEDUP_MODEL_SEED"); s != "" {
		seed0, _ = strconv.ParseInt(s, 10, 64)
		iters = 1
	}
	saveCap, saveStale, saveRuns := indexCap, staleEvery, maxOpenBytes
	defer func() { indexCap, staleEvery, maxOpenBytes = saveCap, saveStale, saveRuns }()
	mustDrops := 0
	for it := range iters {
		seed := seed0 + int64(it)
		n, ok := modelHistory(t, seed)
		if !ok {
			t.Fatalf("seed %d failed (DEDUP_MODEL_SEED=%d runs it alone)", seed, seed)
		}
		mustDrops += n
	}
	if mustDrops < iters {
		t.Errorf("%d guaranteed repeats in %d histories: the histories do not test what they should", mustDrops, iters)
	}
}

func modelHistory(t *testing.T, seed int64) (mustDrops int, ok bool) {
	rng := rand.New(rand.NewSource(seed))
	var log []string
	defer func() {
		if !ok {
			for _, l := range log {
				t.Log(l)
			}
		}
	}()
	logf := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	indexCap = []int{1, 2, 3, 1000}[rng.Intn(4)]
	staleEvery = []uint64{4, 16, 1 << 16}[rng.Intn(3)]
	maxOpenBytes = []int{1, 30, 8 << 20}[rng.Intn(3)]
	const nkg = 4
	store := map[uint16]*MemKV{}
	hist := map[uint16]map[string][]byte{}
	for kg := uint16(0); kg < nkg; kg++ {
		store[kg] = NewMemKV()
		hist[kg] = map[string][]byte{}
		for _, c := range modelCanaries {
			store[kg].m[c] = []byte("canary")
		}
	}
	ttlSet := []int64{1, 2, 3, 5, 7, 10, 25}
	ttlSet = []int64{ttlSet[rng.Intn(len(ttlSet))], ttlSet[rng.Intn(len(ttlSet))], ttlSet[rng.Intn(len(ttlSet))]}
	base := []int64{0, 1_700_000_000_000, -5000}[rng.Intn(3)]
	M := base
	var kept []sighting
	var ttls []int64
	nruns := 2 + rng.Intn(6)
	resurrect := rng.Intn(2) == 0
	plain := rng.Intn(3) == 0
	legacy := rng.Intn(4) == 0
	vals := 3 + rng.Intn(5)
	logf("seed %d indexCap %d staleEvery %d maxOpenBytes %d ttls %v base %d resurrect %v plain %v legacy %v", seed, indexCap, staleEvery, maxOpenBytes, ttlSet, base, resurrect, plain, legacy)
	P0 := ttlSet[0]
	ttls = []int64{P0} // run 0: the previous version's
	if legacy {
		for kg := uint16(0); kg < nkg; kg++ {
			for v := 0; v < vals; v++ {
				if rng.Intn(2) == 0 {
					f := M - int64(rng.Intn(20))
					val := fmt.Sprintf(`"v%d`, v)
					var b [9]byte
					b[0] = dedupFormat
					binary.BigEndian.PutUint64(b[1:], uint64(f))
					k := "transform/dedup/d/" + val
					store[kg].m[k] = b[:]
					hist[kg][k] = b[:]
					kept = append(kept, sighting{kg, val, f, 0})
				}
			}
		}
	}
	guaranteed := func(s sighting) bool { return guaranteedSighting(s, ttls, P0, M) }
	first := 1
	if plain {
		first = 0
	}
	for run := first; run <= nruns; run++ {
		T := ttlSet[rng.Intn(len(ttlSet))]
		if run <= 1 && (plain || legacy) {
			T = P0
		}
		if run > 0 {
			ttls = append(ttls, T)
		}
		runIdx := run
		isPlainRun := run == 0
		// resurrection: expired keys come back
		if resurrect && run > 0 {
			resurrectKeys(rng, store, hist, nkg, logf)
		}
		// workers
		kvs, ds, owner := modelWorkers(t, rng, T, nkg, store, hist)
		logf("run %d ttl %d workers %d owner %v", run, T, len(ds), owner)
		n := 20 + rng.Intn(200)
		for i := 0; i < n; i++ {
			switch rng.Intn(20) {
			case 0:
				M += int64(rng.Intn(int(3*T) + 1))
			case 1:
				M += int64(rng.Intn(int(40) + 1))
			}
			now := M - int64(rng.Intn(int(T)+1))
			if rng.Intn(10) == 0 {
				now = M + int64(rng.Intn(int(T)+1))
			}
			M = max(M, now)
			kg := uint16(rng.Intn(nkg))
			v := rng.Intn(vals)
			val := fmt.Sprintf(`"v%d`, v)
			w := owner[kg]
			if rng.Intn(25) == 0 { // a checkpoint: what the runs hold so far
				if err := ds[w].Flush(); err != nil {
					t.Errorf("seed %d: flush: %v", seed, err)
					return mustDrops, false
				}
			}
			kvs[w].kg = kg
			keep, err := ds[w].Apply(recAt(fmt.Sprintf(`{"id":"v%d"}`, v), time.UnixMilli(now)))
			if err != nil {
				logf("ERROR %v", err)
				t.Errorf("seed %d: error %v", seed, err)
				return mustDrops, false
			}
			allowDrop, mustDrop, why := modelRule(kept, kg, val, now, T, guaranteed)
			logf("  rec kg %d v%d now %d M %d w %d -> keep %v", kg, v, now, M, w, keep)
			if mustDrop {
				mustDrops++
			}
			if keep && mustDrop {
				t.Errorf("seed %d: repeat kept: kg %d v%d now %d ttl %d; sighting %+v (ttls %v)", seed, kg, v, now, T, why, ttls)
				return mustDrops, false
			}
			if !keep && !allowDrop {
				t.Errorf("seed %d: new value dropped: kg %d v%d now %d ttl %d", seed, kg, v, now, T)
				return mustDrops, false
			}
			if keep {
				kept = append(kept, sighting{kg, val, now, runIdx})
			}
		}
		for w := range ds { // the run ends with a checkpoint
			if err := ds[w].Flush(); err != nil {
				t.Errorf("seed %d: flush: %v", seed, err)
				return mustDrops, false
			}
		}
		if isPlainRun {
			// turn this run's keys into the previous version's layout: no
			// width, an entry per number
			span := widthSpan([]byte("transform/dedup/d/"), T)
			for kg := uint16(0); kg < nkg; kg++ {
				for k, v := range store[kg].m {
					if k >= string(span.lo) && k < string(span.hi) {
						delete(store[kg].m, k)
						nk := "transform/dedup/d/\x00" + k[len(span.head):]
						for nk, nv := range previousVersionEntries(nk, v, len("transform/dedup/d/\x00")+8) {
							store[kg].m[nk] = nv
							hist[kg][nk] = nv
						}
					}
				}
				for k := range hist[kg] {
					if k >= string(span.lo) && k < string(span.hi) {
						delete(hist[kg], k)
					}
				}
			}
		}
	}
	// far forward: everything but the final records must go
	T := ttlSet[rng.Intn(len(ttlSet))]
	ttls = append(ttls, T)
	M += 100 * 25
	for kg := uint16(0); kg < nkg; kg++ {
		kv := &modelKV{t: t, own: map[uint16]*MemKV{kg: store[kg]}, hist: hist, kg: kg}
		d, _ := NewDedup(DedupConfig{Name: "d", Key: "id", TTL: time.Duration(T) * time.Millisecond}, kv)
		if _, err := d.Apply(recAt(`{"id":"final"}`, time.UnixMilli(M))); err != nil {
			t.Errorf("seed %d: final: %v", seed, err)
			return mustDrops, false
		}
		if err := d.Flush(); err != nil {
			t.Errorf("seed %d: final flush: %v", seed, err)
			return mustDrops, false
		}
		if len(d.old) != 0 || d.legacy {
			t.Errorf("seed %d: kg %d old gens %d legacy %v left", seed, kg, len(d.old), d.legacy)
			return mustDrops, false
		}
		want := 1 + len(modelCanaries)
		if store[kg].Len() != want {
			for k := range store[kg].m {
				logf("left %q", k)
			}
			t.Errorf("seed %d: kg %d holds %d keys, want %d", seed, kg, store[kg].Len(), want)
			return mustDrops, false
		}
	}
	return mustDrops, true
}

// previousVersionEntries returns the entries the version before runs wrote
// for the entry k, v of this one, whose bucket ends at bucket (with or
// without the width): a run's entries one per number, anything else as it
// is.
func previousVersionEntries(k string, v []byte, bucket int) map[string][]byte {
	if len(k) <= bucket || k[bucket] != runTag {
		return map[string][]byte{k: v}
	}
	n0 := binary.BigEndian.Uint32([]byte(k[bucket+1:]))
	out := map[string][]byte{}
	err := eachRunEntry(v, func(i int, first int64, val []byte) bool {
		nk := binary.BigEndian.AppendUint32(append([]byte(k[:bucket]), numberTag), n0+uint32(i))
		out[string(nk)] = append(binary.BigEndian.AppendUint64([]byte{numberFormat}, uint64(first)), val...)
		return true
	})
	if err != nil {
		panic(err)
	}
	return out
}

// guaranteedSighting says whether the dedup must remember sighting s at
// newest record time M: within two of the shortest TTLs of the runs since
// it (ttls, by run), and, for a sighting of the previous version's state
// (run 0, written with ttl P), only if no run changed the ttl since.
func guaranteedSighting(s sighting, ttls []int64, P, M int64) bool {
	mn := int64(1 << 62)
	for r := s.run; r < len(ttls); r++ {
		mn = min(mn, ttls[r])
	}
	if s.run == 0 {
		for r := 1; r < len(ttls); r++ {
			if ttls[r] != P {
				return false
			}
		}
	}
	return M-s.f < 2*mn
}

// modelRule is the rule for a record of value val in key group kg at time
// now under ttl T, given the sightings kept: it may be dropped if one of
// them is within T before it, and must be if that one is guaranteed (why).
func modelRule(kept []sighting, kg uint16, val string, now, T int64, guaranteed func(sighting) bool) (allowDrop, mustDrop bool, why sighting) {
	for _, s := range kept {
		if s.kg == kg && s.val == val && s.f > now-T {
			allowDrop = true
			if guaranteed(s) {
				mustDrop, why = true, s
			}
		}
	}
	return allowDrop, mustDrop, why
}

// resurrectKeys brings back, each with odds of one in three, the keys of
// nkg key groups that an expiry removed from store (as a restore may).
func resurrectKeys(rng *rand.Rand, store map[uint16]*MemKV, hist map[uint16]map[string][]byte, nkg uint16, logf func(string, ...any)) {
	for kg := uint16(0); kg < nkg; kg++ {
		for k, v := range hist[kg] {
			if _, there := store[kg].m[k]; !there && rng.Intn(3) == 0 {
				store[kg].m[k] = append([]byte(nil), v...)
				logf("resurrect kg %d %q", kg, k)
			}
		}
	}
}

// modelWorkers makes 1-3 workers, each a Dedup of ttl T on a modelKV, and
// deals the nkg key groups of store among them at random.
func modelWorkers(t *testing.T, rng *rand.Rand, T int64, nkg uint16, store map[uint16]*MemKV, hist map[uint16]map[string][]byte) ([]*modelKV, []*Dedup, map[uint16]int) {
	P := 1 + rng.Intn(3)
	kvs := make([]*modelKV, P)
	ds := make([]*Dedup, P)
	for w := range P {
		kvs[w] = &modelKV{t: t, own: map[uint16]*MemKV{}, hist: hist}
		d, err := NewDedup(DedupConfig{Name: "d", Key: "id", TTL: time.Duration(T) * time.Millisecond}, kvs[w])
		if err != nil {
			t.Fatal(err)
		}
		ds[w] = d
	}
	owner := map[uint16]int{}
	for kg := uint16(0); kg < nkg; kg++ {
		w := rng.Intn(P)
		owner[kg] = w
		kvs[w].own[kg] = store[kg]
	}
	return kvs, ds, owner
}
