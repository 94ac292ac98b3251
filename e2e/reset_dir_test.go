package e2e

import (
	"os"
	"testing"
	"time"
)

// TestAFallBackStartOnAResetCheckpointDirCommitsItsFiles: the job drains
// ids [0, a) into files and stops; its checkpoint and state dirs are then
// emptied while the files stay (a new pod without its volume). A start
// refuses (the sink shows output of checkpoints the dir does not hold);
// with checkpoint.on_unrestorable: fall_back it starts from the group's
// committed offsets, at the end of [0, a). Its checkpoints were numbered
// from 1 again, and the file sink refused to commit a file under the name
// of a committed one of the same number (the job stopped); they are now
// numbered after the newest whose files are visible. Every id arrives
// exactly once, with one fall-back counted.
func TestAFallBackStartOnAResetCheckpointDirCommitsItsFiles(t *testing.T) {
	const (
		a = 200 // ids before the reset
		n = 400 // ids after it
	)
	j := newJob(t, cluster(t), jobSpec{Partitions: 2, Parallelism: 2})
	produceIDs(t, j.brokers, j.topic, 0, a, false)
	p := j.start()
	j.waitForAll(p, a, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireGroupAtInputEnd()

	for _, dir := range []string{j.ckptDir, j.stateDir} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	p = j.start()
	j.requireFailure(p, time.Minute, "the sink shows output of later checkpoints", "checkpoint.on_unrestorable: fall_back")

	j.spec.Config = map[string]map[string]any{"checkpoint": {"on_unrestorable": "fall_back"}}
	p = j.start()
	j.waitReady(p, time.Minute)
	if v, err := p.metric(metricRestoreFallbacks); err != nil || v != 1 {
		j.errorf(p, "%s: %s = %v (%v), want 1", p, metricRestoreFallbacks, v, err)
	}
	produceIDs(t, j.brokers, j.topic, a, n, false)
	j.waitForAll(p, n, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	if errs := j.restartErrors(p); len(errs) > 0 {
		j.errorf(p, "%s restarted the job %d times after the fall-back (first: %s)", p, len(errs), errs[0])
	}
	j.requireExactlyOnce(n, 0, "checkpoint_dir=reset")
}
