package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestDamagedNewestMetadataRefusesTheStartUnlessFallingBackIsAllowed: a
// job's newest checkpoint is made to be the only one that holds some ids
// (their output is visible); with the job stopped, its metadata file is
// cut to half its size. `connector checkpoints list` reports it corrupt. A
// start refuses with exit status 1, without restarting in process: its
// failure names the checkpoint, says the sink already shows its output, and
// names checkpoint.on_unrestorable. With on_unrestorable: fall_back the job
// starts from the checkpoint before (error log line, and
// connector_checkpoint_restore_fallbacks_total 1), reads the skipped
// checkpoint's ids again and writes them again, as fall_back says it will;
// new ids go through once. In the end the output holds every id exactly
// once, but the skipped checkpoint's exactly twice.
func TestDamagedNewestMetadataRefusesTheStartUnlessFallingBackIsAllowed(t *testing.T) {
	const (
		a = 120 // ids [0, a): in the older checkpoints
		b = 180 // ids [a, b): in the newest alone
		n = 240 // ids [b, n): after the fall-back
	)
	j := newJob(t, cluster(t), jobSpec{Partitions: 2, Parallelism: 2})
	prev, newest := j.newestCheckpointHoldsOnlyNewIDs(a, b)

	path := j.metaPath(newest)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut %s from %d to %d bytes", path, info.Size(), info.Size()/2)
	rows := j.checkpointList()
	if last := rows[len(rows)-1]; last.ID != newest || last.Status != "corrupt" {
		t.Errorf("connector checkpoints list: newest %+v, want checkpoint %d corrupt", last, newest)
	}

	p := j.start()
	j.requireFailure(p, time.Minute, fmt.Sprintf("checkpoint %d", newest),
		"the sink already shows their output", "checkpoint.on_unrestorable")
	j.requireNoRestart(p)

	j.spec.Config = map[string]map[string]any{"checkpoint": {"on_unrestorable": "fall_back"}}
	p = j.start()
	j.requireFallBack(p, prev, newest)
	produceIDs(t, j.brokers, j.topic, b, n, false)
	j.waitForAll(p, n, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireOnceExceptTwice(n, a, b)
}
