package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestKafkaSinkTwoProcessesOfOneJobStayExactlyOnce: two processes of one
// job writing to a Kafka topic run with the same config (the same job
// name, so the same transactional ids <job>-w<w>-t<slot>, the same
// progress groups and the same consumer group) but directories of their
// own (the checkpoint store's and state root's locks do not see each
// other), while ids keep coming; the second starts once the first has
// completed two checkpoints.
//
// First the second process is refused at start: the sink's progress
// markers show checkpoints its empty checkpoint dir does not hold, so it
// stops with exit status 1 naming the progress groups and the possibility
// of another instance, before it touches any transactional id: the first
// process is not disturbed (it does not restart).
//
// Then a second process that overrides that check
// (checkpoint.on_unrestorable: fall_back) starts. Which one loses, and
// how:
//
//   - The later process loses the job, by the source's group-commit
//     instance detection: both read every partition and commit to the
//     group, and once the later one has committed and finds the earlier
//     one's commit there, it stops with exit status 1 naming the group and
//     the other process's pid (two_instances_test.go shows it for the
//     file sink).
//   - Before that, the earlier one loses its open transactions, by
//     fencing: the later one's recovery at start initialises the job's
//     transactional ids, which aborts the earlier one's open transactions
//     and fences its producers (PRODUCER_FENCED on their next produce,
//     marker or EndTxn). Their records are in no committed transaction and
//     the source does not rewind while the job runs, so the earlier
//     process must restart the job in process (from its last completed
//     checkpoint) to write them again: required whenever the later process
//     logged aborting an open transaction.
//
// In the end the earlier process keeps completing checkpoints, drains the
// topic (a completed checkpoint covers the ends of the input) and stops on
// SIGTERM: a read_committed consumer reads every id exactly once and the
// group committed the ends of the input. If the later process has not
// stopped 90 s after its start (the two keep fencing each other),
// that is a failure too; it is then killed and, once the earlier one
// drained, the job is started once more, so that its recovery aborts what
// the killed one left open, and the output is checked all the same.
func TestKafkaSinkTwoProcessesOfOneJobStayExactlyOnce(t *testing.T) {
	b := cluster(t)
	j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2, KafkaSink: &kafkaSinkSpec{},
		Config: map[string]map[string]any{"checkpoint": {"timeout": "10s"}}})
	// Runs until stopped, so that both processes write and commit (10M
	// ids would last 80 minutes).
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})
	p := j.start()
	j.waitReady(p, time.Minute)
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 2 }, 50*time.Millisecond, time.Minute)

	refused := j.twin()
	r := refused.start()
	refused.requireFailure(r, time.Minute, "the sink shows output of later checkpoints", progressGroupOf(j.name, 0), "another instance of job "+j.name)
	if n := len(refused.logsOf(msgAbortedOpen, r)); n > 0 {
		refused.errorf(r, "%s was refused at start and yet aborted %d open transactions of the job", r, n)
	}
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job in process %d times while a refused process came and went (first: %s), want none", p, len(errs), errs[0])
	}

	tw := j.twin()
	tw.spec.Config["checkpoint"]["on_unrestorable"] = "fall_back"
	q := tw.start()
	killed := false
	if q.wait(90 * time.Second) {
		tw.requireFailure(q, time.Second, "another process commits to group "+j.name, fmt.Sprintf("pid=%d ", p.pid()))
	} else {
		tw.errorf(q, "%s (the later process) still running 90s after its start, want it to stop by itself: it restarted the job in process %d times, %s %d times (each restart's recovery aborts the other's open transactions)",
			q, len(tw.restartErrors(q)), p, len(j.restartErrors(p)))
		tw.kill(q)
		killed = true
	}
	fenced, restarts := len(tw.logsOf(msgAbortedOpen, q)), len(j.restartErrors(p))
	t.Logf("%s aborted open transactions %d times; %s restarted the job in process %d times", q, fenced, p, restarts)
	if fenced > 0 && restarts == 0 {
		j.errorf(p, "%s aborted %d open transactions of the job, and %s did not restart the job in process: the records they held are in no committed transaction and only a restart writes them again",
			q, fenced, p)
	}

	j.requireRunning(p, "after the later process ended")
	done, err := p.metric(metricCheckpoints)
	if err != nil {
		j.fatalf(p, "%s: %v", p, err)
	}
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= done+3 }, 50*time.Millisecond, 2*time.Minute)
	n := prod.stop(t, time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	if killed {
		// The killed process left its open transactions behind; a start
		// of the job aborts them (kafka_lingering_test.go).
		p = j.start()
		j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, time.Minute)
		j.terminate(p, time.Minute)
	}
	j.requireExactlyOnce(n, 0, fmt.Sprintf("later_process_stopped=%v fenced_txns=%d earlier_restarts=%d", !killed, fenced, restarts))
	j.requireGroupAtInputEnd()
}

// progressGroupOf is the Kafka sink's progress group of a job's writer
// (sink/kafka: <job>.sink-progress.w<writer>).
func progressGroupOf(job string, writer int) string {
	return fmt.Sprintf("%s.sink-progress.w%d", job, writer)
}
