package transform

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"
)

func copyStore(s map[uint16]*MemKV) map[uint16]*MemKV {
	out := map[uint16]*MemKV{}
	for kg, m := range s {
		c := NewMemKV()
		for k, v := range m.m {
			c.m[k] = append([]byte(nil), v...)
		}
		out[kg] = c
	}
	return out
}

func copyHist(h map[uint16]map[string][]byte) map[uint16]map[string][]byte {
	out := map[uint16]map[string][]byte{}
	for kg, m := range h {
		c := map[string][]byte{}
		for k, v := range m {
			c[k] = v
		}
		out[kg] = c
	}
	return out
}

// TestDedupCrashModel: like TestDedupAgainstAModel, with checkpoints (every
// worker flushes, the state is copied) and crashes (the workers are lost
// without a flush, the state of the last checkpoint restored, maybe with
// another assignment of key groups, maybe with expired keys brought back,
// and the records since the checkpoint replayed), runs that fill (one
// history in three), and an upgrade that rewrites the runs written so far
// as the previous version's numbered entries. Written by a review helper.
// 60 seeds by default (3 s); DEDUP_MODEL_ITERS for more.
func TestDedupCrashModel(t *testing.T) {
	iters, seed0 := 60, int64(1)
	if s := os.Getenv("DEDUP_MODEL_ITERS"); s != "" {
		iters, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("DEDUP_MODEL_SEED"); s != "" {
		seed0, _ = strconv.ParseInt(s, 10, 64)
		iters = 1
	}
	if s := os.Getenv("DEDUP_MODEL_FROM"); s != "" {
		seed0, _ = strconv.ParseInt(s, 10, 64)
	}
	saveCap, saveStale, saveRuns := indexCap, staleEvery, maxOpenBytes
	defer func() { indexCap, staleEvery, maxOpenBytes = saveCap, saveStale, saveRuns }()
	crashMustDrops = 0
	for it := range iters {
		seed := seed0 + int64(it)
		if !crashHistory(t, seed) {
			t.Fatalf("seed %d failed (DEDUP_MODEL_SEED=%d runs it alone)", seed, seed)
		}
	}
	if crashMustDrops < iters {
		t.Errorf("%d guaranteed repeats in %d histories: the histories do not test what they should", crashMustDrops, iters)
	}
}

// crashMustDrops counts the guaranteed repeats the histories met.
var crashMustDrops int

type crec struct {
	kg  uint16
	v   int
	now int64
	M   int64
}

func crashHistory(t *testing.T, seed int64) (ok bool) {
	rng := rand.New(rand.NewSource(seed))
	var log []string
	defer func() {
		if !ok || t.Failed() || os.Getenv("DUMP") != "" {
			for _, l := range log {
				t.Log(l)
			}
		}
	}()
	logf := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	indexCap = []int{1, 2, 3, 100, 200, 1000, 1 << 20}[rng.Intn(7)]
	staleEvery = []uint64{4, 16, 1 << 16}[rng.Intn(3)]
	maxOpenBytes = []int{1, 30, 60, 8 << 20}[rng.Intn(4)]
	// Key groups: a few, or more than maxOpenBytes holds many times over (runs
	// closed and taken up again all the time).
	nkg := uint16([]int{4, 4, 24}[rng.Intn(3)])
	// Values: short, or long enough that a run passes maxCachedRun (a run
	// the cache does not hold), or a mix.
	pad := []int{0, 0, 40, 120}[rng.Intn(4)]
	valOf := func(v int) string {
		if pad == 0 || v%3 == 0 {
			return fmt.Sprintf("v%d", v)
		}
		return fmt.Sprintf("v%d-%0*d", v, pad, v)
	}
	store := map[uint16]*MemKV{}
	hist := map[uint16]map[string][]byte{}
	for kg := uint16(0); kg < nkg; kg++ {
		store[kg] = NewMemKV()
		hist[kg] = map[string][]byte{}
	}
	ttlSet := []int64{1, 2, 3, 5, 7, 10, 25}
	big := os.Getenv("DEDUP_MODEL_BIG") != "" || rng.Intn(3) == 0
	if big {
		ttlSet = []int64{25, 100, 400, 1000}
	}
	ttlSet = []int64{ttlSet[rng.Intn(len(ttlSet))], ttlSet[rng.Intn(len(ttlSet))], ttlSet[rng.Intn(len(ttlSet))]}
	base := []int64{0, 1_700_000_000_000, -5000}[rng.Intn(3)]
	M := base
	var kept []sighting
	var ttls []int64
	nruns := 1 + rng.Intn(5)
	resurrect := rng.Intn(2) == 0
	plain := rng.Intn(3) == 0
	vals := 3 + rng.Intn(30)
	if big {
		vals = 50 + rng.Intn(400)
	}
	upgradeAt := -1
	if rng.Intn(2) == 0 {
		upgradeAt = 1 + rng.Intn(2)
	}
	logf("seed %d indexCap %d staleEvery %d maxOpenBytes %d nkg %d pad %d ttls %v base %d resurrect %v plain %v vals %d", seed, indexCap, staleEvery, maxOpenBytes, nkg, pad, ttlSet, base, resurrect, plain, vals)
	P0 := ttlSet[0]
	ttls = []int64{P0}
	guaranteed := func(s sighting) bool { return guaranteedSighting(s, ttls, P0, M) }
	first := 1
	if plain {
		first = 0
	}
	for run := first; run <= nruns; run++ {
		T := ttlSet[rng.Intn(len(ttlSet))]
		if run <= 1 && plain {
			T = P0
		}
		if run > 0 {
			ttls = append(ttls, T)
		}
		if resurrect && run > 0 {
			resurrectKeys(rng, store, hist, nkg, logf)
		}
		var kvs []*modelKV
		var ds []*Dedup
		var owner map[uint16]int
		start := func() {
			kvs, ds, owner = modelWorkers(t, rng, T, nkg, store, hist)
			logf("run %d ttl %d workers %d owner %v", run, T, len(ds), owner)
		}
		start()
		n := 20 + rng.Intn(300)
		if big {
			n = 200 + rng.Intn(3000)
		}
		recs := make([]crec, n)
		for i := range recs {
			switch k := rng.Intn(20); {
			case big && k == 0 && rng.Intn(200) == 0:
				M += int64(rng.Intn(int(3*T) + 1))
			case big && k == 1:
				M += int64(rng.Intn(5 + 1))
			case big:
			case k == 0:
				M += int64(rng.Intn(int(3*T) + 1))
			case k == 1:
				M += int64(rng.Intn(int(40) + 1))
			}
			now := M - int64(rng.Intn(int(T)+1))
			if rng.Intn(10) == 0 {
				now = M + int64(rng.Intn(int(T)+1))
				if big && rng.Intn(50) != 0 {
					now = M + int64(rng.Intn(3))
				}
			}
			M = max(M, now)
			recs[i] = crec{uint16(rng.Intn(int(nkg))), rng.Intn(vals), now, M}
		}
		Mend := M
		ckStore, ckHist, ckKept, ckI := copyStore(store), copyHist(hist), append([]sighting(nil), kept...), 0
		crashes := 0
		flushAll := func() bool {
			for w := range ds {
				if err := ds[w].Flush(); err != nil {
					t.Errorf("seed %d: flush: %v", seed, err)
					return false
				}
			}
			return true
		}
		for i := 0; i < n; i++ {
			if rng.Intn(15) == 0 {
				if !flushAll() {
					return false
				}
				ckStore, ckHist, ckKept, ckI = copyStore(store), copyHist(hist), append([]sighting(nil), kept...), i
				logf("checkpoint at %d", i)
			}
			if crashes < 3 && rng.Intn(30) == 0 {
				crashes++
				store = copyStore(ckStore)
				hist = copyHist(ckHist)
				kept = append([]sighting(nil), ckKept...)
				logf("crash at %d: back to %d", i, ckI)
				i = ckI
				if resurrect {
					resurrectKeys(rng, store, hist, nkg, logf)
				}
				start()
			}
			r := recs[i]
			M = r.M
			kg, v, now := r.kg, r.v, r.now
			val := `"` + valOf(v)
			w := owner[kg]
			if rng.Intn(25) == 0 {
				if err := ds[w].Flush(); err != nil {
					t.Errorf("seed %d: flush: %v", seed, err)
					return false
				}
			}
			kvs[w].kg = kg
			keep, err := ds[w].Apply(recAt(fmt.Sprintf(`{"id":"%s"}`, valOf(v)), time.UnixMilli(now)))
			if err != nil {
				logf("ERROR %v", err)
				t.Errorf("seed %d: error %v", seed, err)
				return false
			}
			allowDrop, mustDrop, why := modelRule(kept, kg, val, now, T, guaranteed)
			logf("  rec %d kg %d v%d now %d M %d w %d -> keep %v", i, kg, v, now, M, w, keep)
			if mustDrop {
				crashMustDrops++
			}
			if keep && mustDrop {
				t.Errorf("seed %d: repeat kept: kg %d v%d now %d ttl %d; sighting %+v (ttls %v)", seed, kg, v, now, T, why, ttls)
				return false
			}
			if !keep && !allowDrop {
				t.Errorf("seed %d: new value dropped: kg %d v%d now %d ttl %d", seed, kg, v, now, T)
				return false
			}
			if keep {
				kept = append(kept, sighting{kg, val, now, run})
			}
		}
		M = Mend
		if !flushAll() {
			return false
		}
		if run == upgradeAt {
			// everything written so far was written by the version before
			// runs: an entry per number, with the width
			head := len("transform/dedup/d/") + 2 + 8
			for kg := uint16(0); kg < nkg; kg++ {
				for k, v := range store[kg].m {
					if len(k) > head+8 && k[head-10] == bucketTag && k[head-9] == widthTag && k[head+8] == runTag {
						delete(store[kg].m, k)
						delete(hist[kg], k)
						for nk, nv := range previousVersionEntries(k, v, head+8) {
							store[kg].m[nk] = nv
							hist[kg][nk] = nv
						}
					}
				}
				for k := range hist[kg] {
					if len(k) > head+8 && k[head-10] == bucketTag && k[head-9] == widthTag && k[head+8] == runTag {
						delete(hist[kg], k)
					}
				}
			}
			logf("upgrade after run %d", run)
		}
		if run == 0 {
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
	_ = binary.BigEndian
	return true
}
