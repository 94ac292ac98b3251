package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// TestKafkaSinkASecondProcessIsRefusedOnceTheSinkCommitted: two processes
// of one job writing to a Kafka topic, with the same config (the same job
// name, so the same transactional ids <job>-w<w>-t<slot>, the same
// progress groups and the same consumer group) but directories of their
// own (the checkpoint store's and state root's locks do not see each
// other), while ids keep coming; the second starts once the first has
// completed two checkpoints.
//
// The second process is refused at start: the sink's progress markers
// show checkpoints its empty checkpoint dir does not hold, so it stops
// with exit status 1 naming the progress groups and the possibility of
// another instance, before it touches any transactional id: the first
// process is not disturbed (it does not restart). It then drains the
// topic and stops on SIGTERM: a read_committed consumer reads every id
// exactly once, and the group committed the ends of the input.
//
// (A second process that overrides the check, checkpoint.on_unrestorable:
// fall_back, is told that output is written again: no exactly-once claim
// holds for it.)
func TestKafkaSinkASecondProcessIsRefusedOnceTheSinkCommitted(t *testing.T) {
	b := cluster(t)
	j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2, KafkaSink: &kafkaSinkSpec{},
		Config: map[string]map[string]any{"checkpoint": {"timeout": "10s"}}})
	// Runs until stopped (10M ids would last 80 minutes).
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})
	p := j.start()
	j.waitReady(p, time.Minute)
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 2 }, 50*time.Millisecond, time.Minute)

	tw := j.twin()
	q := tw.start()
	tw.requireFailure(q, time.Minute, "the sink shows output of later checkpoints", progressGroupOf(j.name, 0), "another instance of job "+j.name)
	if n := len(tw.logsOf(msgAbortedOpen, q)); n > 0 {
		tw.errorf(q, "%s was refused at start and yet aborted %d open transactions of the job", q, n)
	}

	done, err := p.metric(metricCheckpoints)
	if err != nil {
		j.fatalf(p, "%s: %v", p, err)
	}
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= done+3 }, 50*time.Millisecond, 2*time.Minute)
	n := prod.stop(t, time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job %d times (first: %s): the refused process disturbed it", p, len(errs), errs[0])
	}
	j.requireExactlyOnce(n, 0, "second_process=refused")
	j.requireGroupAtInputEnd()
}

// TestKafkaSinkASecondProcessFencesTheFirstsOpenTransaction: the first
// process of a job writing to a Kafka topic takes no checkpoint
// (checkpoint.initial_delay and interval 1 h): it writes every id of the
// input into an open transaction and commits nothing, so the sink's
// progress markers hold nothing and a second process of the job, with
// directories of its own, passes the start's check. Its recovery
// initialises the job's transactional ids, which aborts the first's open
// transaction and fences its producer; it then writes every id itself,
// and drains. The first process, stopped with SIGTERM, must make nothing
// of its transaction visible: its final checkpoint's pre-commit finds its
// producer fenced, and it exits with a failure. A read_committed consumer
// reads every id exactly once.
func TestKafkaSinkASecondProcessFencesTheFirstsOpenTransaction(t *testing.T) {
	const n = 4_000
	b := cluster(t)
	j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2, KafkaSink: &kafkaSinkSpec{}, Interval: time.Hour,
		Config: map[string]map[string]any{"checkpoint": {"initial_delay": "1h"}}})
	produceIDs(t, b, j.topic, 0, n, false)
	p := j.start()
	j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v >= n }, 50*time.Millisecond, time.Minute)

	tw := j.twin()
	tw.spec.Interval = 300 * time.Millisecond
	delete(tw.spec.Config, "checkpoint")
	q := tw.start()
	tw.waitCheckpointAtEnd(q, 2*time.Minute)
	if len(tw.logsOf(msgAbortedOpen, q)) == 0 {
		tw.errorf(q, "%s did not log aborting the first process's open transactions (%q)", q, msgAbortedOpen)
	}

	p.signal(syscall.SIGTERM)
	if !p.wait(time.Minute) {
		j.errorf(p, "%s still running a minute after SIGTERM", p)
		j.kill(p)
	} else if p.state.ExitCode() == 0 {
		j.errorf(p, "%s: exit status 0 after SIGTERM, want a failure: its final checkpoint cannot commit a fenced transaction", p)
	} else {
		t.Logf("%s: %s after SIGTERM (fenced)", p, p.status())
	}
	tw.terminate(q, time.Minute)
	j.requireExactlyOnce(n, 0, fmt.Sprintf("fenced_by_second_process=%d", len(tw.logsOf(msgAbortedOpen, q))))
	j.requireGroupAtInputEnd()
}

// progressGroupOf is the Kafka sink's progress group of a job's writer
// (sink/kafka: <job>.sink-progress.w<writer>).
func progressGroupOf(job string, writer int) string {
	return fmt.Sprintf("%s.sink-progress.w%d", job, writer)
}
