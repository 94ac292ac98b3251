package metrics

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// DefBuckets are the default histogram upper bounds, in seconds: the same as
// the Prometheus client's, fit for latencies from 5ms to 10s.
var DefBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// reservoirSize is how many of the latest observations a histogram keeps
// for Quantile.
const reservoirSize = 1024

// Histogram counts observations into buckets and keeps the last 1024 of
// them for exact quantiles. Safe for concurrent use; Observe takes a short
// mutex.
type Histogram struct {
	bounds []float64 // upper bounds, strictly increasing, without +Inf

	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; len(bounds)+1, the last is +Inf
	count  uint64
	sum    float64
	recent [reservoirSize]float64 // ring of the latest observations
	next   int                    // where the next observation goes in recent
}

func newHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe records one observation.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // first bound >= v: le is inclusive
	h.mu.Lock()
	h.counts[i]++
	h.count++
	h.sum += v
	h.recent[h.next] = v
	h.next = (h.next + 1) % reservoirSize
	h.mu.Unlock()
}

// Count returns how many observations were made.
func (h *Histogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// Sum returns the sum of all observations.
func (h *Histogram) Sum() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sum
}

// Quantile returns the q-quantile (0 <= q <= 1) of the last 1024
// observations, exactly (nearest rank): Quantile(0.5) is their median,
// Quantile(1) their maximum. It returns NaN when nothing was observed.
func (h *Histogram) Quantile(q float64) float64 {
	h.mu.Lock()
	n := int(min(h.count, reservoirSize))
	vals := make([]float64, n)
	copy(vals, h.recent[:n])
	h.mu.Unlock()
	if n == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	slices.Sort(vals)
	rank := int(math.Ceil(min(max(q, 0), 1)*float64(n))) - 1
	return vals[max(rank, 0)]
}

// snapshot returns cumulative bucket counts, the sum and the count, taken
// together.
func (h *Histogram) snapshot() (cumulative []uint64, sum float64, count uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cumulative = make([]uint64, len(h.counts))
	var acc uint64
	for i, c := range h.counts {
		acc += c
		cumulative[i] = acc
	}
	return cumulative, h.sum, h.count
}

// normalizeBuckets validates bucket bounds and drops a trailing +Inf.
func normalizeBuckets(name string, buckets []float64) []float64 {
	if buckets == nil {
		buckets = DefBuckets
	}
	b := slices.Clone(buckets)
	if n := len(b); n > 0 && math.IsInf(b[n-1], 1) {
		b = b[:n-1]
	}
	for i, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) || (i > 0 && v <= b[i-1]) {
			panic(fmt.Sprintf("metrics: %s: buckets must be finite and strictly increasing, got %v", name, buckets))
		}
	}
	return b
}
