package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/internal/s3test"
)

// TestCheckpointsInS3RestoreOnAnotherMachine: with checkpoint.storage on
// S3, every run of the job starts as if on a new machine (its
// checkpoint.dir and state.dir wiped before each start), so what it
// restores (source positions, the dedup's keyed state, the s3 sink's open
// uploads) comes from the bucket alone. Under 20 or more random SIGKILLs,
// with ids produced twice on purpose, every id is in the output once.
// Then a run that checkpoints and stops cleanly, and one more on a new
// machine, which must restore the stop's final checkpoint, downloaded from
// the bucket; the bucket then holds at most checkpoint.retained
// checkpoints of the job.
func TestCheckpointsInS3RestoreOnAnotherMachine(t *testing.T) {
	b := cluster(t)
	spec := jobSpec{
		Parallelism: 2, Partitions: 6, FullSnapshotAfter: "32KiB",
		Transforms: []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}},
	}
	j, c, bucket := s3Job(t, b, spec, "jsonl")
	j.spec.Config = map[string]map[string]any{
		"pipeline": {"key_by": "id"},
		"checkpoint": {"storage": "s3://" + bucket + "/checkpoints", "s3": map[string]any{
			"endpoint": c.Endpoint, "region": c.Region, "access_key_id": c.AccessKey, "secret_access_key": c.SecretKey,
		}},
	}
	j.newMachine = true
	killAndDrain(t, b, j, producerSpec{DupEvery: 20, CopyKey: "-copy"})

	// A run that checkpoints and stops cleanly (its final checkpoint is
	// the newest in the bucket), then one on a new machine, which must
	// restore exactly that one.
	p := j.start()
	j.waitLogged(p, "checkpoint completed", 2, time.Minute)
	j.terminate(p, time.Minute)
	completed := logLines[struct {
		Checkpoint uint64 `json:"checkpoint"`
	}](j, "checkpoint completed", p)
	final := completed[len(completed)-1].Checkpoint

	p = j.start()
	j.waitLogged(p, "restoring from checkpoint", 1, time.Minute)
	attached := logLines[struct {
		Downloaded int `json:"downloaded"`
	}](j, "checkpoint storage attached", p)
	restored := logLines[struct {
		Checkpoint uint64 `json:"checkpoint"`
	}](j, "restoring from checkpoint", p)
	if len(attached) != 1 || attached[0].Downloaded < 1 || restored[0].Checkpoint != final {
		j.fatalf(p, "a run on a new machine after a clean stop: attached %+v, restored %+v; want the stop's checkpoint %d downloaded and restored", attached, restored, final)
	}
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(200_000, 0, "after two more runs, each on a new machine")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var metas []string
	for o := range s3test.Client(t, c).ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "checkpoints/" + j.name + "/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if strings.HasSuffix(o.Key, ".meta") {
			metas = append(metas, o.Key)
		}
	}
	if len(metas) == 0 || len(metas) > 3 {
		t.Errorf("the bucket holds %d checkpoints of the job, want 1 to 3 (checkpoint.retained): %v", len(metas), metas)
	}
}
