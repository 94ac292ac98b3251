package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestKafkaSinkExactlyOnceAcrossABrokerRestart: a job reading from and
// writing to the tight broker (broker_helpers_test.go) runs while ids keep
// coming; the broker is stopped (SIGTERM, a controlled shutdown) and,
// once the job's /readyz answers 503 because the source has not heard from
// the brokers for 15 s, started again on its data. The connector process
// stays up throughout. (The job may be restarting then instead, "not
// running": a transaction the outage cut short fails its task, and the
// restart waits for the broker.) The outage outlasts the job's transaction
// timeout (6 s), so the broker, once back, may abort any transaction that was open
// when it stopped, whatever stage it was at (filling, pre-committed, part
// of a completed checkpoint), before the job gets to end it; what such a
// transaction held must be written again. After the broker is back the
// job becomes ready again, drains (a completed checkpoint covers the ends
// of the input) and stops on SIGTERM: a read_committed consumer reads
// every id exactly once, and the group committed the ends of the input.
//
// checkpoint.tolerable_failures is high (100), so that the checkpoints
// that fail during the outage do not restart the job by themselves:
// exactly-once must not depend on such a restart rewinding the source
// past a transaction the broker aborted. How often the job restarted in
// process and produced a transaction again depends on where the outage
// caught it: logged, not checked.
func TestKafkaSinkExactlyOnceAcrossABrokerRestart(t *testing.T) {
	b := tightCluster(t)
	j := newJob(t, b, jobSpec{Parallelism: 2, KafkaSink: &kafkaSinkSpec{}, Config: map[string]map[string]any{
		"checkpoint": {"timeout": "5s", "tolerable_failures": 100},
		"sink":       {"transaction_timeout": "6s"},
	}})
	// Runs until stopped, through the outage: its client holds the ids it
	// could not send and sends them once the broker is back (10M ids would
	// last 2.7 hours at this rate).
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 1_000})
	p := j.start()
	j.waitReady(p, time.Minute)
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 3 }, 50*time.Millisecond, time.Minute)

	stopTight(t)
	down := time.Now()
	why := j.waitNotReadyFor(p, 2*time.Minute, "have not answered", "not running")
	t.Logf("%s: not ready %v after the broker stopped: %s", p, time.Since(down).Round(time.Millisecond), why)
	j.requireRunning(p, "while the broker is down")
	startTightAgain(t)
	t.Logf("the broker was down for %v", time.Since(down).Round(time.Millisecond))

	ready := j.waitReady(p, 2*time.Minute)
	t.Logf("%s: ready again %v after its start", p, ready.Round(time.Millisecond))
	n := prod.stopAfter(t, int(prod.sent.Load())+2_000, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, fmt.Sprintf("broker_restarts=1 job_restarts_in_process=%d produced_again=%d",
		len(j.restartErrors(p)), len(j.logsOf(msgProducedAgain))))
	j.requireGroupAtInputEnd()
}
