package metrics

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/connector-dev/connector/internal/offheap"
)

func TestSnapshotSumsSeriesAndCountsObservations(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "h"}, []string{"w"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Help: "h"})
	reg.MustRegister(c, h)
	c.WithLabelValues("0").Add(2)
	c.WithLabelValues("1").Add(3)
	h.Observe(1)
	h.Observe(2)
	s, err := Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Sum("c_total"); !ok || v != 5 {
		t.Errorf("Sum(c_total) = %v, %v", v, ok)
	}
	if v, ok := s.Sum("h_seconds"); !ok || v != 2 {
		t.Errorf("Sum(h_seconds) = %v, %v; want the 2 observations", v, ok)
	}
	if _, ok := s.Sum("missing"); ok {
		t.Error("a missing family is reported present")
	}
	if series := s.Series("c_total"); len(series) != 2 || series[1].Labels["w"] != "1" || series[1].Value != 3 {
		t.Errorf("Series(c_total) = %+v", series)
	}
}

func TestQuantileInterpolatesWithinTheBucketLikePromQL(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "d_seconds", Help: "h", Buckets: []float64{1, 2, 4}}, []string{"w"})
	reg.MustRegister(h)
	s, _ := Gather(reg)
	if q := s.Quantile("d_seconds", 0.5); !math.IsNaN(q) {
		t.Errorf("quantile of nothing = %v, want NaN", q)
	}
	// Two series, merged: 4 observations <= 1, 4 in (1, 2], 2 in (2, 4].
	for range 4 {
		h.WithLabelValues("a").Observe(0.5)
		h.WithLabelValues("b").Observe(1.5)
	}
	h.WithLabelValues("a").Observe(3)
	h.WithLabelValues("b").Observe(3)
	s, _ = Gather(reg)
	for q, want := range map[float64]float64{0.2: 0.5, 0.4: 1, 0.6: 1.5, 0.9: 3, 1: 4} {
		if got := s.Quantile("d_seconds", q); math.Abs(got-want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	h.WithLabelValues("a").Observe(100) // beyond the last bucket
	s, _ = Gather(reg)
	if got := s.Quantile("d_seconds", 1); got != 4 {
		t.Errorf("Quantile(1) with an observation past the buckets = %v, want the last bound 4", got)
	}
}

func TestParseTextReadsAScrape(t *testing.T) {
	s, err := ParseText(strings.NewReader("# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"1\"} 4\nx_total{a=\"2\"} 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Sum("x_total"); v != 7 {
		t.Errorf("Sum = %v, want 7", v)
	}
	if _, err := ParseText(strings.NewReader("not a metric line at all {\n")); err == nil {
		t.Error("garbage parsed without error")
	}
}

func TestNewRegistryHasGoProcessAndBuildInfo(t *testing.T) {
	s, err := Gather(NewRegistry(BuildInfo{Version: "v1.2.3", GoVersion: "go1.99"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "connector_build_info"} {
		if _, ok := s.Sum(name); !ok {
			t.Errorf("no %s", name)
		}
	}
	info := s.Series("connector_build_info")
	if len(info) != 1 || info[0].Value != 1 || info[0].Labels["version"] != "v1.2.3" ||
		info[0].Labels["goversion"] != "go1.99" || info[0].Labels["pebble"] != "unknown" {
		t.Errorf("connector_build_info = %+v", info)
	}
}

// The dedup's index tables are mapped outside Go's heap: the gauge counts
// a table while it is mapped.
func TestNewRegistryCountsTablesOffTheHeap(t *testing.T) {
	reg := NewRegistry(BuildInfo{})
	before, err := Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	table := offheap.New(1 << 17) // 1 MiB: mapped (tables of 64 KiB and more are)
	after, err := Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(table)
	b, okB := before.Sum("connector_offheap_bytes")
	a, okA := after.Sum("connector_offheap_bytes")
	if !okB || !okA || a-b != 1<<20 {
		t.Errorf("connector_offheap_bytes %v (present %v), then %v (present %v) with a 1 MiB table mapped; want 1 MiB more", b, okB, a, okA)
	}
}
