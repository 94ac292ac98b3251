package pipeline

import "github.com/connector-dev/connector/internal/metrics"

// jobMetrics are the job's series. The names in the DESIGN contract
// (connector_checkpoints_completed_total, connector_checkpoint_duration_seconds,
// connector_records_in_total, connector_records_out_total) are relied on by
// outside tools.
type jobMetrics struct {
	recordsIn          *metrics.Counter
	recordsOut         *metrics.Counter
	checkpointsDone    *metrics.Counter
	checkpointsFailed  *metrics.Counter
	checkpointDuration *metrics.Histogram
	lastCompleted      *metrics.Gauge
	restarts           *metrics.Counter
	badSkipped         *metrics.Counter
	badDeadLettered    *metrics.Counter
	offsetCommitErrors *metrics.Counter
}

var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func newJobMetrics(r *metrics.Registry) *jobMetrics {
	return &jobMetrics{
		recordsIn:          r.Counter("connector_records_in_total", "Records read from Kafka."),
		recordsOut:         r.Counter("connector_records_out_total", "Records written to the sink (visible once their checkpoint completes)."),
		checkpointsDone:    r.Counter("connector_checkpoints_completed_total", "Checkpoints completed: metadata durable, sinks committed."),
		checkpointsFailed:  r.Counter("connector_checkpoints_failed_total", "Checkpoints aborted: declined, timed out or not persisted."),
		checkpointDuration: r.Histogram("connector_checkpoint_duration_seconds", "Time from trigger to completion of a checkpoint.", durationBuckets),
		lastCompleted:      r.Gauge("connector_checkpoint_last_completed_id", "Id of the last completed checkpoint."),
		restarts:           r.Counter("connector_job_restarts_total", "Restarts of the job after a failure."),
		badSkipped:         r.Counter("connector_records_skipped_total", "Records that could not be processed and were skipped (on_decode_error: skip)."),
		badDeadLettered:    r.Counter("connector_records_dead_lettered_total", "Records that could not be processed and went to the dead-letter topic."),
		offsetCommitErrors: r.Counter("connector_offset_commit_errors_total", "Failed commits of checkpoint offsets to the consumer group."),
	}
}
