package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestAMissingStateFileRefusesTheStartUnlessFallingBackIsAllowed: a dedup
// job's newest checkpoint is made to be the only one that holds some ids
// (their output, visible, and the state changes they made: files no older
// checkpoint references); with the job stopped, one of those state files
// is deleted. A start then refuses with exit status 1, without restarting
// in process: its failure names the checkpoint and the missing file, says
// the sink already shows that checkpoint's output, and names
// checkpoint.on_unrestorable. With on_unrestorable: fall_back the job starts
// from the checkpoint before (error log line, and
// connector_checkpoint_restore_fallbacks_total 1): it reads the ids of the
// skipped checkpoint again and writes them again, as fall_back says it
// will, and nothing else twice: copies of every id produced so far are
// dropped (the older checkpoint's state was restored whole, and the ids
// read again are added to it), and new ids go through once. In the end the
// output holds every id exactly once, but the skipped checkpoint's exactly
// twice.
func TestAMissingStateFileRefusesTheStartUnlessFallingBackIsAllowed(t *testing.T) {
	const (
		a = 120 // ids [0, a): in the older checkpoints
		b = 180 // ids [a, b): in the newest alone
		n = 240 // ids [b, n): after the fall-back
	)
	dedup := []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}}
	j := newJob(t, cluster(t), jobSpec{Partitions: 2, Parallelism: 2, Transforms: dedup})
	prev, newest := j.newestCheckpointHoldsOnlyNewIDs(a, b)

	older := j.checkpointFiles(prev)
	var own []string
	for _, f := range j.checkpointFiles(newest) {
		if !slices.Contains(older, f) {
			own = append(own, f)
		}
	}
	if len(own) == 0 {
		t.Fatalf("checkpoint %d references no state file that checkpoint %d does not (%v): the new ids changed no state?", newest, prev, older)
	}
	missing := own[0]
	if err := os.RemoveAll(filepath.Join(j.stateDir, missing)); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %s, referenced by checkpoint %d and no older one", missing, newest)

	p := j.start()
	j.requireFailure(p, time.Minute, fmt.Sprintf("checkpoint %d", newest), missing,
		"the sink already shows their output", "checkpoint.on_unrestorable")
	j.requireNoRestart(p)

	j.spec.Config = map[string]map[string]any{"checkpoint": {"on_unrestorable": "fall_back"}}
	p = j.start()
	j.requireFallBack(p, prev, newest)
	produceIDs(t, j.brokers, j.topic, 0, b, true)
	produceIDs(t, j.brokers, j.topic, b, n, false)
	j.waitForAll(p, n, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireOnceExceptTwice(n, a, b)
}
