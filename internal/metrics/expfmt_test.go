package metrics

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestWritePrometheusRendersEveryTypeSorted(t *testing.T) {
	r := NewRegistry()
	r.Counter("connector_records_out_total", "Records written.", "worker", "2").Add(7)
	r.Counter("connector_records_out_total", "ignored", "worker", "10").Add(3)
	r.Counter("connector_records_in_total", "Records read.").Add(10)
	r.Gauge("connector_lag", "Lag.", "topic", "orders").Set(-1.25)
	h := r.Histogram("connector_checkpoint_duration_seconds", "Checkpoint duration.", []float64{0.1, 1})
	h.Observe(0.05)
	h.Observe(0.5)

	e := scrape(t, r)
	want := []string{
		"# HELP connector_checkpoint_duration_seconds Checkpoint duration.",
		"# TYPE connector_checkpoint_duration_seconds histogram",
		`connector_checkpoint_duration_seconds_bucket{le="0.1"} 1`,
		`connector_checkpoint_duration_seconds_bucket{le="1"} 2`,
		`connector_checkpoint_duration_seconds_bucket{le="+Inf"} 2`,
		"connector_checkpoint_duration_seconds_sum 0.55",
		"connector_checkpoint_duration_seconds_count 2",
		"# HELP connector_lag Lag.",
		"# TYPE connector_lag gauge",
		`connector_lag{topic="orders"} -1.25`,
		"# HELP connector_records_in_total Records read.",
		"# TYPE connector_records_in_total counter",
		"connector_records_in_total 10",
		"# HELP connector_records_out_total Records written.",
		"# TYPE connector_records_out_total counter",
		`connector_records_out_total{worker="10"} 3`,
		`connector_records_out_total{worker="2"} 7`,
	}
	if !slices.Equal(e.lines, want) {
		t.Errorf("got\n%s\nwant\n%s", e, strings.Join(want, "\n"))
	}
}

func TestLabelValuesAndHelpAreEscaped(t *testing.T) {
	r := NewRegistry()
	r.Counter("c_total", "line one\nback\\slash", "path", "a\"b\\c\nd").Inc()
	e := scrape(t, r)
	if got := e.help["c_total"]; got != `line one\nback\\slash` {
		t.Errorf("HELP = %q", got)
	}
	if got := e.value(t, `c_total{path="a\"b\\c\nd"}`); got != 1 {
		t.Errorf("value = %v", got)
	}
}

func TestEmptyRegistryWritesNothing(t *testing.T) {
	var b strings.Builder
	if err := NewRegistry().WritePrometheus(&b); err != nil || b.Len() != 0 {
		t.Errorf("got %q, %v", b.String(), err)
	}
}

type failingWriter struct{}

var errDiskGone = errors.New("disk gone")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskGone }

func TestWritePrometheusReturnsTheWriteError(t *testing.T) {
	r := NewRegistry()
	r.Counter("c_total", "help").Inc()
	if err := r.WritePrometheus(failingWriter{}); !errors.Is(err, errDiskGone) {
		t.Errorf("err = %v, want it to wrap %v", err, errDiskGone)
	}
}
