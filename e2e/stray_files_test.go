package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStrayNamesInTheCheckpointDirAreIgnored: before a job's first start,
// its checkpoint dir holds two files no store writes: a temp file of an id
// at the top of the uint64 range and a metadata file of the highest id,
// full of garbage. Had they counted, the next checkpoint id would overflow,
// and the garbage would be the newest checkpoint, which cannot be restored.
// Instead each is reported at warn level and ignored: checkpoints complete
// with small ids; SIGTERM exits 0; a restart restores the newest real
// checkpoint (not refusing over the garbage) and goes on. Every id is
// visible exactly once.
func TestStrayNamesInTheCheckpointDirAreIgnored(t *testing.T) {
	const (
		n1 = 300 // ids before the first SIGTERM
		n  = 600 // ids in all
		// small bounds the ids of real checkpoints: far more than these
		// runs complete, far below the stray ids.
		small = 1_000_000
	)
	strays := []string{
		"chk-18446744073709551614.meta.tmp", // 2^64-2
		"chk-18446744073709551615.meta",     // 2^64-1
	}
	j := newJob(t, cluster(t), jobSpec{Partitions: 4, Parallelism: 2})
	if err := os.MkdirAll(j.ckptDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range strays {
		if err := os.WriteFile(filepath.Join(j.ckptDir, name), []byte("not a checkpoint\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	p := j.start()
	produceIDs(t, j.brokers, j.topic, 0, n1, false)
	j.waitForAll(p, n1, 90*time.Second)
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 3 }, 50*time.Millisecond, time.Minute)
	j.waitCheckpointAtEnd(p, time.Minute)
	for _, name := range strays {
		if len(j.logsWithField(p, "warn", "file", name)) == 0 {
			j.errorf(p, "%s: no warning about %s", p, name)
		}
	}
	if id, _, err := p.lastCompleted(); err != nil || id == 0 || id >= small {
		j.errorf(p, "%s: last completed checkpoint %d (%v), want one below %d", p, id, err, small)
	}
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n1, 0, "first_run")

	p = j.start()
	j.waitReady(p, time.Minute)
	type restoring struct {
		Checkpoint uint64 `json:"checkpoint"`
	}
	if r := logLines[restoring](j, "restoring from checkpoint", p); len(r) != 1 || r[0].Checkpoint == 0 || r[0].Checkpoint >= small {
		j.errorf(p, "%s: restoring %+v, want one checkpoint below %d", p, r, small)
	}
	produceIDs(t, j.brokers, j.topic, n1, n, false)
	j.waitForAll(p, n, 90*time.Second)
	j.waitCheckpointAtEnd(p, time.Minute)
	if id, _, err := p.lastCompleted(); err != nil || id == 0 || id >= small {
		j.errorf(p, "%s: last completed checkpoint %d (%v), want one below %d", p, id, err, small)
	}
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, "strays=2")
}
