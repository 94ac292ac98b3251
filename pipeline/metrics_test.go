package pipeline

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/transform"
)

// statsSink is a sink that only reports Stats.
type statsSink struct {
	sink.Sink
	stats sink.Stats
}

func (s statsSink) Stats() sink.Stats { return s.stats }

// dropAll drops every record.
type dropAll struct{}

func (dropAll) Apply(*record.Record) (bool, error) { return false, nil }

func gather(t *testing.T, reg *prometheus.Registry) metrics.Snapshot {
	t.Helper()
	s, err := metrics.Gather(reg)
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return s
}

// TestAttemptCountersCarryOverRestarts: what a detached attempt counted is
// added to what the next attempt counts from zero, and stays exposed
// between attempts.
func TestAttemptCountersCarryOverRestarts(t *testing.T) {
	reg := prometheus.NewPedanticRegistry() // what Collect emits must match Describe
	m := newAttemptMetrics()
	reg.MustRegister(m)
	run := func(dropped int, stats sink.Stats) (detach func()) {
		c := transform.NewChain(dropAll{})
		for range dropped {
			_, _ = c.Apply(&record.Record{Value: []byte(`{}`)})
		}
		c.Publish() // as the worker does after each batch
		return m.attach(&attemptObjects{sink: statsSink{stats: stats}, chains: []*transform.Chain{c, nil}})
	}
	want := func(when string, dropped, bytes, files float64) {
		t.Helper()
		s := gather(t, reg)
		for name, v := range map[string]float64{
			"connector_records_dropped_total":             dropped,
			"connector_sink_written_bytes_total":          bytes,
			"connector_sink_committed_files_total":        files,
			"connector_sink_written_records_total":        files * 10,
			"connector_sink_transactions_committed_total": files * 2,
			"connector_sink_transactions_aborted_total":   files * 3,
		} {
			if got, ok := s.Sum(name); !ok || got != v {
				t.Errorf("%s: %s = %v (present %v), want %v", when, name, got, ok, v)
			}
		}
	}
	if s := gather(t, reg); len(s) != 0 {
		t.Errorf("before any attempt: %v", s)
	}
	stats := func(bytes, files uint64, open time.Duration) sink.Stats {
		return sink.Stats{BytesWritten: bytes, FilesCommitted: files, RecordsWritten: files * 10,
			TransactionsCommitted: files * 2, TransactionsAborted: files * 3, OldestOpenTransaction: open}
	}
	oldest := func(when string, v float64) {
		t.Helper()
		if got, ok := gather(t, reg).Sum("connector_sink_oldest_open_transaction_seconds"); !ok || got != v {
			t.Errorf("%s: oldest open transaction = %v (present %v), want %v", when, got, ok, v)
		}
	}
	detach := run(3, stats(100, 2, 4*time.Second))
	want("first attempt", 3, 100, 2)
	oldest("first attempt", 4)
	detach()
	want("between attempts", 3, 100, 2)
	oldest("between attempts: an attempt's transactions end with it", 0)
	detach = run(4, stats(50, 1, 0))
	want("second attempt", 7, 150, 3)
	detach()
	want("after the second attempt", 7, 150, 3)
	if d := gather(t, reg).Series("connector_records_dropped_total"); len(d) != 1 || d[0].Labels["transform"] != "custom" || d[0].Labels["step"] != "0" {
		t.Errorf("dropped series: %+v", d)
	}
}

// TestMetricsSurviveRestarts: a job that restarts (its sink commit fails)
// keeps one registration of every metric, gathers without error while
// attempts come and go (run with -race), never lets a counter go down, and
// leaves no Kafka client's metrics behind once it stopped.
func TestMetricsSurviveRestarts(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{parallelism: 2,
		transforms: `{type: filter, condition: {field: amount, op: lt, value: 50}}, {type: dedup, key: id, ttl: 10m}`})
	cfg.Restart.MaxFailures = 1000
	var on atomic.Bool
	reg := prometheus.NewPedanticRegistry()
	r := startWith(t, cfg, Options{Registry: reg, FS: faultyFS(dir, &on, func(op errorfs.Op) error {
		if op.Kind == errorfs.OpRename && strings.Contains(op.Path, "/.inprogress.") {
			return fmt.Errorf("injected rename failure: %w", syscall.EIO)
		}
		return nil
	})})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { scrapeUntil(t, reg, stop) })
	produceIDs(t, b, topic, 0, 1000)
	waitAll(t, outDir(cfg), 500) // amount = id % 100 < 50
	on.Store(true)
	produceIDs(t, b, topic, 1000, 2000)
	waitUntil(t, "a restart after the failed commit", func() bool { return r.counter("connector_job_restarts_total") >= 1 })
	on.Store(false)
	waitAll(t, outDir(cfg), 1000)
	done := r.counter("connector_checkpoints_completed_total")
	waitUntil(t, "checkpoints of the attempt after the restart", func() bool {
		return r.counter("connector_checkpoints_completed_total") >= done+2
	})
	if lag := gather(t, reg).Series("connector_consumer_lag_records"); len(lag) != 2 {
		t.Errorf("lag after the restart: %+v, want both partitions", lag)
	}
	close(stop)
	wg.Wait()
	r.stop(t)

	s := gather(t, reg)
	for name, least := range map[string]float64{
		"connector_records_dropped_total":      1000, // every other id, at least once
		"connector_sink_committed_files_total": 2,
		"connector_sink_written_bytes_total":   1,
		"connector_state_flushes_total":        0,
		"connector_state_write_stalls_total":   0,
	} {
		if v, ok := s.Sum(name); !ok || v < least {
			t.Errorf("after the stop: %s = %v (present %v), want >= %v", name, v, ok, least)
		}
	}
	for name, f := range s {
		// A closed client's counters stay at their totals (metrics.KafkaClients);
		// its gauges, as the other gauges of closed objects, go.
		kafkaGauge := strings.HasPrefix(name, "connector_kafka_") && f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_HISTOGRAM
		if kafkaGauge || name == "connector_consumer_lag_records" || name == "connector_state_disk_usage_bytes" {
			t.Errorf("after the stop, %s is still exposed: it reads a closed object", name)
		}
	}
}

// scrapeUntil gathers reg until stop is closed, failing the test on a
// gather error or a counter that went down.
func scrapeUntil(t *testing.T, reg *prometheus.Registry, stop <-chan struct{}) {
	counters := []string{"connector_records_in_total", "connector_records_dropped_total", "connector_sink_written_bytes_total",
		"connector_sink_committed_files_total", "connector_state_flushes_total", "connector_state_block_cache_misses_total"}
	last := map[string]float64{}
	for {
		select {
		case <-stop:
			return
		default:
		}
		s, err := metrics.Gather(reg)
		if err != nil {
			t.Errorf("gather: %v", err)
			return
		}
		for _, name := range counters {
			v, _ := s.Sum(name)
			if v < last[name] {
				t.Errorf("%s went down from %v to %v", name, last[name], v)
			}
			last[name] = v
		}
	}
}
