package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
)

// counterSeries is every series of every counter family of reg (and a
// histogram's count), by family name and label set.
func counterSeries(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	s, err := metrics.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range s {
		if f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, x := range s.Series(name) {
			var labels []string
			for _, k := range slices.Sorted(maps.Keys(x.Labels)) {
				labels = append(labels, k+"="+x.Labels[k])
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = x.Value
		}
	}
	return out
}

// TestReviewObsNoCounterSeriesGoesDownAcrossAnInProcessRestart: a job
// that restarts in process (its sink commit fails once) keeps every
// counter series monotonic, series by series: the same name and labels
// never show a smaller value later in the process's life. The job's own
// counters and the attempts' (sink, transforms, state) are carried over
// restarts (metrics_attempt.go); franz-go's per-client counters
// (connector_kafka_*, labelled client="source-0" and so on, the same
// labels every attempt) start again from zero with each attempt's new
// client, so a scrape after the restart reads, under the same labels,
// less than one before it.
func TestReviewObsNoCounterSeriesGoesDownAcrossAnInProcessRestart(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{})
	cfg.Restart.MaxFailures = 1000
	var on atomic.Bool
	reg := prometheus.NewRegistry()
	r := startWith(t, cfg, Options{Registry: reg, FS: faultyFS(dir, &on, func(op errorfs.Op) error {
		if op.Kind == errorfs.OpRename && strings.Contains(op.Path, "/.inprogress.") {
			return fmt.Errorf("injected rename failure: %w", syscall.EIO)
		}
		return nil
	})})
	produceIDs(t, b, topic, 0, 2000)
	waitAll(t, outDir(cfg), 2000)
	before := counterSeries(t, reg)
	if len(before) == 0 {
		t.Fatal("no counter series before the restart")
	}

	on.Store(true)
	produceIDs(t, b, topic, 2000, 2100)
	waitUntil(t, "a restart after the failed commit", func() bool { return r.counter("connector_job_restarts_total") >= 1 })
	on.Store(false)
	waitAll(t, outDir(cfg), 2100)
	done := r.counter("connector_checkpoints_completed_total")
	waitUntil(t, "two checkpoints of the attempt after the restart", func() bool {
		return r.counter("connector_checkpoints_completed_total") >= done+2
	})
	after := counterSeries(t, reg)
	r.stop(t)

	for _, k := range slices.Sorted(maps.Keys(before)) {
		if v, ok := after[k]; ok && v < before[k] {
			t.Errorf("%s went down across the restart: %v, then %v", k, before[k], v)
		}
	}
}
