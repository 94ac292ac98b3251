package metrics

import (
	"io"
	"strconv"
	"sync"
	"testing"
)

// TestConcurrentUpdatesLoseNothing runs adds, observations, lookups and
// scrapes at once (meant for -race) and checks the totals.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	const goroutines, perG = 8, 10_000
	r := NewRegistry()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			shared := r.Counter("shared_total", "help")
			own := r.Counter("own_total", "help", "g", strconv.Itoa(g))
			gauge := r.Gauge("gauge", "help")
			h := r.Histogram("h_seconds", "help", nil)
			for i := range perG {
				shared.Inc()
				own.Add(2)
				gauge.Add(1)
				h.Observe(float64(i % 10))
				if i%1000 == 0 {
					_ = r.WritePrometheus(io.Discard)
					_ = h.Quantile(0.99)
				}
			}
		})
	}
	wg.Wait()
	if got := r.Counter("shared_total", "help").Value(); got != goroutines*perG {
		t.Errorf("shared counter = %d, want %d", got, goroutines*perG)
	}
	e := scrape(t, r)
	for g := range goroutines {
		if got := e.value(t, `own_total{g="`+strconv.Itoa(g)+`"}`); got != 2*perG {
			t.Errorf("own counter %d = %v, want %d", g, got, 2*perG)
		}
	}
	if got := e.value(t, "gauge"); got != goroutines*perG {
		t.Errorf("gauge = %v, want %d", got, goroutines*perG)
	}
	if got := e.value(t, "h_seconds_count"); got != goroutines*perG {
		t.Errorf("histogram count = %v, want %d", got, goroutines*perG)
	}
	if got := e.value(t, `h_seconds_bucket{le="+Inf"}`); got != goroutines*perG {
		t.Errorf("+Inf bucket = %v, want %d", got, goroutines*perG)
	}
}
