package metrics

import (
	"math"
	"strings"
	"testing"
)

func TestSameNameAndLabelsReturnSameMetric(t *testing.T) {
	r := NewRegistry()
	a := r.Counter("c_total", "help", "worker", "1", "job", "j")
	b := r.Counter("c_total", "other help", "job", "j", "worker", "1") // label order does not matter
	if a != b {
		t.Fatal("second lookup returned a new counter")
	}
	if r.Counter("c_total", "help", "worker", "2") == a {
		t.Fatal("other labels returned the same counter")
	}
	if r.Gauge("g", "help") != r.Gauge("g", "help") {
		t.Fatal("gauge lookup is not stable")
	}
	if r.Histogram("h", "help", nil) != r.Histogram("h", "help", nil) {
		t.Fatal("histogram lookup is not stable")
	}
}

func TestCounterAndGaugeValues(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("c_total", "help")
	c.Inc()
	c.Add(41)
	if c.Value() != 42 {
		t.Errorf("counter = %d, want 42", c.Value())
	}
	g := r.Gauge("g", "help")
	g.Set(2.5)
	g.Add(-1)
	if g.Value() != 1.5 {
		t.Errorf("gauge = %v, want 1.5", g.Value())
	}
}

func TestMisuseIsABugAndPanics(t *testing.T) {
	for name, f := range map[string]func(r *Registry){
		"odd labels":       func(r *Registry) { r.Counter("c", "h", "worker") },
		"bad metric name":  func(r *Registry) { r.Counter("1c", "h") },
		"bad label name":   func(r *Registry) { r.Counter("c", "h", "a-b", "1") },
		"reserved le":      func(r *Registry) { r.Counter("c", "h", "le", "1") },
		"duplicate label":  func(r *Registry) { r.Counter("c", "h", "a", "1", "a", "2") },
		"type conflict":    func(r *Registry) { r.Counter("x", "h"); r.Gauge("x", "h") },
		"unsorted buckets": func(r *Registry) { r.Histogram("h", "h", []float64{1, 0.5}) },
		"NaN bucket":       func(r *Registry) { r.Histogram("h", "h", []float64{math.NaN()}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f(NewRegistry())
		})
	}
}

func TestHistogramQuantilesAreExactOverTheLast1024(t *testing.T) {
	h := NewRegistry().Histogram("h", "help", nil)
	if !math.IsNaN(h.Quantile(0.5)) {
		t.Errorf("quantile of nothing = %v, want NaN", h.Quantile(0.5))
	}
	for i := 1; i <= 100; i++ {
		h.Observe(float64(i))
	}
	for q, want := range map[float64]float64{0: 1, 0.5: 50, 0.99: 99, 1: 100} {
		if got := h.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	// 5000 more: only the last 1024 (3977..5000 offset by 1000) count.
	for i := 1; i <= 5000; i++ {
		h.Observe(float64(1000 + i))
	}
	if got, want := h.Quantile(0), float64(1000+5000-1023); got != want {
		t.Errorf("min of the reservoir = %v, want %v", got, want)
	}
	if got := h.Quantile(1); got != 6000 {
		t.Errorf("max of the reservoir = %v, want 6000", got)
	}
	if h.Count() != 5100 {
		t.Errorf("count = %d, want 5100", h.Count())
	}
}

func TestHistogramBucketsAreUpperInclusive(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("lat_seconds", "help", []float64{1, 2, math.Inf(1)})
	for _, v := range []float64{0.5, 1, 1.5, 2, 3} {
		h.Observe(v)
	}
	e := scrape(t, r)
	for key, want := range map[string]float64{
		`lat_seconds_bucket{le="1"}`:    2,
		`lat_seconds_bucket{le="2"}`:    4,
		`lat_seconds_bucket{le="+Inf"}`: 5,
		`lat_seconds_sum`:               8,
		`lat_seconds_count`:             5,
	} {
		if got := e.value(t, key); got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if n := strings.Count(e.String(), `le="+Inf"`); n != 1 {
		t.Errorf("an explicit +Inf bucket must not be doubled; %d +Inf lines:\n%s", n, e)
	}
}

func TestSeriesOfOneNameShareBuckets(t *testing.T) {
	r := NewRegistry()
	r.Histogram("h", "help", []float64{1}, "w", "1").Observe(5)
	r.Histogram("h", "help", []float64{7, 8}, "w", "2").Observe(5)
	e := scrape(t, r)
	e.value(t, `h_bucket{w="2",le="1"}`)
	if _, ok := e.samples[`h_bucket{w="2",le="7"}`]; ok {
		t.Errorf("second series got its own buckets:\n%s", e)
	}
}
