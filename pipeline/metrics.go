package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/metrics"
)

// jobMetrics are the job's metrics, registered once per Job (New) on the
// registry of Options. The names in the DESIGN contract
// (connector_checkpoints_completed_total, connector_checkpoint_duration_seconds,
// connector_records_in_total, connector_records_out_total) are relied on by
// outside tools.
//
// The fields below are updated where things happen (emitter, worker,
// driver, offset committer, bad records), lock-free, from any goroutine.
// What the objects of one attempt count (consumer lag, transform drops, the
// sink's bytes and files, Pebble) is read at scrape time by attempt (see
// attemptMetrics), and franz-go's client metrics by kafka: both stay
// registered while attempts come and go.
type jobMetrics struct {
	recordsIn          prometheus.Counter
	recordsOut         prometheus.Counter
	checkpointsDone    prometheus.Counter
	checkpointsFailed  prometheus.Counter
	checkpointDuration prometheus.Histogram
	checkpointSize     prometheus.Histogram
	alignment          prometheus.Histogram
	startDelay         prometheus.Histogram
	syncPart           prometheus.Histogram
	asyncPart          prometheus.Histogram
	sinkCommit         prometheus.Histogram
	lastCompleted      prometheus.Gauge
	lastCompletedAt    prometheus.Gauge
	restarts           prometheus.Counter
	badSkipped         prometheus.Counter
	badDeadLettered    prometheus.Counter
	offsetCommitErrors prometheus.Counter
	restoreFallbacks   prometheus.Counter
	interval           prometheus.Gauge
	timeout            prometheus.Gauge

	attempt *attemptMetrics
	kafka   *metrics.KafkaClients
}

var (
	// durationBuckets are for end-to-end checkpoint durations.
	durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// phaseBuckets are for the parts of a checkpoint, some of which take
	// well under a millisecond.
	phaseBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// sizeBuckets: 1 KiB to 16 GiB, by factors of 4.
	sizeBuckets = prometheus.ExponentialBuckets(1<<10, 4, 13)
)

// newJobMetrics makes the job's metrics and registers them on reg. A
// registry takes the metrics of one Job: registering a second one on it is
// a bug and panics.
func newJobMetrics(reg prometheus.Registerer) *jobMetrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &jobMetrics{
		recordsIn:          counter("connector_records_in_total", "Records read from Kafka."),
		recordsOut:         counter("connector_records_out_total", "Records written to the sink (visible once their checkpoint completes)."),
		checkpointsDone:    counter("connector_checkpoints_completed_total", "Checkpoints completed: metadata durable, sinks committed."),
		checkpointsFailed:  counter("connector_checkpoints_failed_total", "Checkpoints aborted: declined, timed out or not persisted."),
		checkpointDuration: histogram("connector_checkpoint_duration_seconds", "Time from trigger to completion of a checkpoint.", durationBuckets),
		checkpointSize: histogram("connector_checkpoint_size_bytes",
			"State bytes a completed checkpoint wrote, summed over the workers (changelogs and new full-snapshot files).", sizeBuckets),
		alignment: histogram("connector_checkpoint_alignment_duration_seconds",
			"Longest time any worker of a completed checkpoint waited for its barrier on every input channel.", phaseBuckets),
		startDelay: histogram("connector_checkpoint_start_delay_seconds",
			"Longest time from a completed checkpoint's trigger to its barrier's first arrival at a worker (records queued ahead of it, a busy reader).", phaseBuckets),
		syncPart: histogram("connector_checkpoint_sync_duration_seconds",
			"Longest synchronous snapshot part (no records processed meanwhile) of any task of a completed checkpoint.", phaseBuckets),
		asyncPart: histogram("connector_checkpoint_async_duration_seconds",
			"Longest asynchronous snapshot part (state and sink made durable while records flow) of any task of a completed checkpoint.", phaseBuckets),
		sinkCommit: histogram("connector_sink_commit_duration_seconds",
			"Time the sink took to commit a completed checkpoint's output (and that of failed checkpoints before it).", phaseBuckets),
		lastCompleted:      gauge("connector_checkpoint_last_completed_id", "Id of the last completed checkpoint."),
		lastCompletedAt:    gauge("connector_checkpoint_last_completed_timestamp_seconds", "When the last completed checkpoint was committed, in seconds since the Unix epoch."),
		restarts:           counter("connector_job_restarts_total", "Restarts of the job after a failure."),
		badSkipped:         counter("connector_records_skipped_total", "Records that could not be processed and were skipped (on_decode_error: skip)."),
		badDeadLettered:    counter("connector_records_dead_lettered_total", "Records that could not be processed and went to the dead-letter topic."),
		offsetCommitErrors: counter("connector_offset_commit_errors_total", "Failed commits of checkpoint offsets to the consumer group."),
		restoreFallbacks: counter("connector_checkpoint_restore_fallbacks_total",
			"Starts that restored an older checkpoint than the newest on disk, which could not be restored (its output may be written again)."),
		// The job's checkpoint settings, so alert rules can say "no
		// checkpoint for N intervals" whatever the interval.
		interval: gauge("connector_checkpoint_interval_seconds", "The job's checkpoint.interval: how often a checkpoint is triggered."),
		timeout:  gauge("connector_checkpoint_timeout_seconds", "The job's checkpoint.timeout: a checkpoint pending longer fails."),
		attempt:  newAttemptMetrics(),
		kafka:    metrics.NewKafkaClients("connector_kafka"),
	}
	reg.MustRegister(
		m.recordsIn, m.recordsOut, m.checkpointsDone, m.checkpointsFailed,
		m.checkpointDuration, m.checkpointSize, m.alignment, m.startDelay, m.syncPart, m.asyncPart, m.sinkCommit,
		m.lastCompleted, m.lastCompletedAt, m.restarts, m.badSkipped, m.badDeadLettered,
		m.offsetCommitErrors, m.restoreFallbacks, m.interval, m.timeout, m.attempt, m.kafka,
	)
	return m
}

// completed records checkpoint a, committed at now.
func (m *jobMetrics) completed(a checkpoint.NotifyComplete, commit time.Duration, now time.Time) {
	m.sinkCommit.Observe(commit.Seconds())
	m.checkpointsDone.Inc()
	m.checkpointDuration.Observe(now.Sub(a.Timestamp).Seconds())
	m.checkpointSize.Observe(float64(a.Totals.Bytes))
	m.alignment.Observe(a.Totals.Alignment.Seconds())
	m.startDelay.Observe(a.Totals.StartDelay.Seconds())
	m.syncPart.Observe(a.Totals.Sync.Seconds())
	m.asyncPart.Observe(a.Totals.Async.Seconds())
	m.lastCompleted.Set(float64(a.ID))
	m.lastCompletedAt.Set(float64(now.UnixNano()) / 1e9)
}
