package e2e

import (
	"testing"
	"time"
)

// TestASecondProcessOnADirectoryInUseIsRefusedAtOnce: while a job runs and
// ids keep coming, a second process of the same job that shares one of its
// directories ends by itself with exit status 1, its failure saying that
// another instance holds that directory; it ends before its source opens
// (it reads nothing) and without restarting in process (a refusal is not
// retried). The first process goes on; once it has drained the topic and
// stopped on SIGTERM, its output holds every id exactly once, and the
// second wrote nothing. Each lock is met on its own, the second process
// starting only once the first is ready (it holds its locks by then):
//
//   - same-sink-path: the file sink's directory (checkpoint and state
//     dirs of its own);
//   - same-state-dir: the state root (checkpoint dir and sink.path of its
//     own);
//   - same-directories: the same config but for the HTTP address (the
//     checkpoint dir's lock is the first it meets).
func TestASecondProcessOnADirectoryInUseIsRefusedAtOnce(t *testing.T) {
	b := cluster(t)
	for _, tc := range []struct {
		name   string
		shared []string
		// names returns what the refusal must name besides "held by
		// another instance".
		names func(j *job) []string
	}{
		{"same-sink-path", []string{shareSinkPath},
			func(j *job) []string { return []string{"another instance of job " + j.name, j.outDir} }},
		{"same-state-dir", []string{shareStateDir},
			func(j *job) []string { return []string{j.stateDir} }},
		{"same-directories", []string{shareCheckpointDir, shareStateDir, shareSinkPath},
			func(j *job) []string { return []string{j.name, j.ckptDir} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2})
			// Runs until stopped: the first process is reading while the
			// second is refused (10M ids would last 80 minutes).
			prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})
			p := j.start()
			j.waitReady(p, time.Minute)
			j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v > 0 }, 50*time.Millisecond, 30*time.Second)

			tw := j.twin(tc.shared...)
			q := tw.start()
			want := append([]string{"held by another instance"}, tc.names(j)...)
			tw.requireFailure(q, 30*time.Second, want...)
			tw.requireNoRestart(q)
			for _, m := range []string{"source opened", "job running"} {
				if tw.logged(q, m) {
					tw.errorf(q, "%s logged %q before it was refused: it should have refused before reading anything", q, m)
				}
			}
			j.requireRunning(p, "after the second process was refused")

			n := prod.stop(t, time.Minute)
			j.waitForAll(p, n, 2*time.Minute)
			j.terminate(p, time.Minute)
			j.requireExactlyOnce(n, 0, "refused_second_process=1")
			if tw.outDir != j.outDir {
				if out, err := tw.out.read(); err != nil || out.files > 0 {
					t.Errorf("the refused process's own sink.path %s holds %d visible files (%v), want none", tw.outDir, out.files, err)
				}
			}
		})
	}
}
