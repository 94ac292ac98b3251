package keygroup

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
)

// maxes are the max parallelisms the property tests cover: the edges, the
// default, powers of two and numbers prime to most parallelisms.
var maxes = []int{1, 2, 3, 7, 8, 10, 97, DefaultMax, 129, 1000, 4096, MaxLimit}

// parallelisms returns the parallelisms worth checking for max: all of them
// when few, else the small ones, the large ones and a random sample.
func parallelisms(max int, rng *rand.Rand) []int {
	if max <= 130 {
		out := make([]int, max)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	out := []int{1, 2, 3, 4, 5, 7, 16, max / 2, max - 1, max}
	for range 20 {
		out = append(out, 1+rng.IntN(max))
	}
	return out
}

// For every max and parallelism, the workers' ranges tile 0..max-1: each in
// order, non-empty, adjacent to the next, and together exactly 0..max-1.
func TestRangesOfAllWorkersTileEveryKeyGroupOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range maxes {
		for _, p := range parallelisms(m, rng) {
			next := 0
			for i := range p {
				r := RangeOf(m, p, i)
				if r.Start != next || r.Empty() {
					t.Fatalf("max %d, parallelism %d: worker %d owns %s, want a non-empty range from %d", m, p, i, r, next)
				}
				if lo, hi := m/p, (m+p-1)/p; r.Len() < lo || r.Len() > hi {
					t.Fatalf("max %d, parallelism %d: worker %d owns %d key groups, want %d or %d", m, p, i, r.Len(), lo, hi)
				}
				next = r.End
			}
			if next != m {
				t.Fatalf("max %d, parallelism %d: the ranges end at %d, want %d", m, p, next, m)
			}
		}
	}
}

// OperatorOf(kg) is the worker whose RangeOf contains kg, for every key group.
func TestOperatorOfAgreesWithRangeOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range maxes {
		for _, p := range parallelisms(m, rng) {
			for i := range p {
				r := RangeOf(m, p, i)
				// Every key group for small max; the edges and a sample else.
				kgs := []int{r.Start, r.End - 1, r.Start + r.Len()/2}
				if m <= 1000 {
					kgs = kgs[:0]
					for kg := r.Start; kg < r.End; kg++ {
						kgs = append(kgs, kg)
					}
				}
				for _, kg := range kgs {
					if w := OperatorOf(kg, m, p); w != i {
						t.Fatalf("max %d, parallelism %d: OperatorOf(%d) = %d, but RangeOf(%d) = %s holds it", m, p, kg, w, i, r)
					}
				}
			}
		}
	}
}

// The ranges match Flink's KeyGroupRangeAssignment, written with its
// inclusive end.
func TestRangeOfIsFlinksFormula(t *testing.T) {
	for _, tc := range []struct{ max, p, i, first, last int }{
		{128, 3, 0, 0, 42}, {128, 3, 1, 43, 85}, {128, 3, 2, 86, 127},
		{10, 4, 0, 0, 2}, {10, 4, 1, 3, 4}, {10, 4, 2, 5, 7}, {10, 4, 3, 8, 9},
		{MaxLimit, MaxLimit, MaxLimit - 1, MaxLimit - 1, MaxLimit - 1},
	} {
		if r := RangeOf(tc.max, tc.p, tc.i); r.Start != tc.first || r.End-1 != tc.last {
			t.Errorf("RangeOf(%d, %d, %d) = %s, want [%d,%d]", tc.max, tc.p, tc.i, r, tc.first, tc.last)
		}
	}
}

// Of is FNV-1a 64 modulo max: the standard library's hash, not seeded.
func TestOfIsFNV1a64ModuloMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		key := make([]byte, rng.IntN(40))
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		m := maxes[rng.IntN(len(maxes))]
		h := fnv.New64a()
		h.Write(key)
		if got, want := Of(key, m), int(h.Sum64()%uint64(m)); got != want {
			t.Fatalf("Of(%x, %d) = %d, want %d", key, m, got, want)
		}
	}
	// Fixed values: a change of hash would move every key's state.
	for _, tc := range []struct {
		key     string
		max, kg int
	}{{"order-42", DefaultMax, 84}, {"order-42", MaxLimit, 25300}, {"", DefaultMax, 37}, {"a", 1, 0}} {
		if got := Of([]byte(tc.key), tc.max); got != tc.kg {
			t.Errorf("Of(%q, %d) = %d, want %d", tc.key, tc.max, got, tc.kg)
		}
	}
}

func TestRangeOperations(t *testing.T) {
	a, b := Range{Start: 10, End: 20}, Range{Start: 15, End: 30}
	if got := a.Intersect(b); got != (Range{15, 20}) {
		t.Errorf("%s ∩ %s = %s, want [15,20)", a, b, got)
	}
	if got := a.Intersect(Range{20, 25}); got != (Range{}) || !got.Empty() || got.Len() != 0 {
		t.Errorf("adjacent ranges intersect in %s, want the empty range", got)
	}
	if a.Len() != 10 || !a.Contains(10) || !a.Contains(19) || a.Contains(20) || a.Contains(9) {
		t.Errorf("%s: Len %d, Contains(10,19,20,9) wrong", a, a.Len())
	}
	if (Range{5, 3}).Len() != 0 || !(Range{5, 3}).Empty() || (Range{}).Contains(0) {
		t.Error("an inverted or zero range is not empty")
	}
	if a.String() != "[10,20)" || (Range{}).String() != "[]" {
		t.Errorf("String: %q, %q", a.String(), Range{}.String())
	}
}

func TestValidateNamesTheBounds(t *testing.T) {
	for _, m := range []int{1, DefaultMax, MaxLimit} {
		if err := Validate(m); err != nil {
			t.Errorf("Validate(%d) = %v", m, err)
		}
	}
	for _, m := range []int{-1, 0, MaxLimit + 1} {
		if err := Validate(m); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d is not in 1..%d", m, MaxLimit)) {
			t.Errorf("Validate(%d) = %v, want an error naming 1..%d", m, err, MaxLimit)
		}
	}
}

// Arguments only a bug produces panic with a message saying what is wrong.
func TestBadArgumentsPanicClearly(t *testing.T) {
	for name, tc := range map[string]struct {
		f    func()
		want string
	}{
		"parallelism above max": {func() { RangeOf(8, 9, 0) }, "parallelism 9 is not in 1..8"},
		"zero parallelism":      {func() { OperatorOf(0, 8, 0) }, "parallelism 0 is not in 1..8"},
		"index":                 {func() { RangeOf(8, 2, 2) }, "worker index 2 out of 0..1"},
		"key group":             {func() { OperatorOf(8, 8, 2) }, "key group 8 out of 0..7"},
		"max":                   {func() { RangeOf(0, 1, 0) }, "max parallelism 0"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("%s: panic %v, want one containing %q", name, r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}
