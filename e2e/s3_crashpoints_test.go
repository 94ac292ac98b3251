package e2e

import (
	"testing"
	"time"
)

// s3CrashPoints are the CONNECTOR_CRASH_AT values a job with the s3 sink
// meets, the first hit of each and later ones (per process; 4 writers):
//
//   - after-part-upload: a part of an open object is uploaded, and no
//     checkpoint records it (hit for every part, the small last part of a
//     rolled object too);
//   - after-precommit: the parts and the tail delta of a checkpoint are
//     uploaded, the worker has not acknowledged it;
//   - after-persist: the checkpoint is durable, none of the objects it
//     rolled is completed (before complete);
//   - between-completes: one object of the checkpoint is complete (visible),
//     the next is not;
//   - mid-commit: an object was completed and its deltas are not deleted;
//   - during-restore: the sink has recovered (completed, resumed, aborted),
//     the state is restored and the source open, nothing is read yet.
var s3CrashPoints = []string{
	"after-part-upload:1",
	"after-part-upload:5",
	"after-precommit:1",
	"after-precommit:10",
	"after-persist:1",
	"after-persist:3",
	"between-completes:1",
	"between-completes:3",
	"mid-commit:1",
	"mid-commit:4",
	"during-restore:1",
}

// TestS3SinkExactlyOnceAtEveryCrashPoint: TestExactlyOnceAtEveryCrashPoint
// with the s3 sink writing jsonl and Parquet at parallelism 4, so a
// checkpoint's commit completes several objects; after the final stop the
// bucket holds no upload and no delta of the job.
func TestS3SinkExactlyOnceAtEveryCrashPoint(t *testing.T) {
	b := cluster(t)
	for _, format := range []string{"jsonl", "parquet"} {
		t.Run(format, func(t *testing.T) {
			j, c, bucket := s3Job(t, b, jobSpec{Parallelism: 4, Partitions: 4, Interval: 200 * time.Millisecond}, format)
			everyCrashPoint(t, j, s3CrashPoints, 2_000)
			if left := s3Leftovers(t, c, bucket, "out/"); len(left) > 0 {
				t.Errorf("after the final stop the bucket still holds: %v", left)
			}
		})
	}
}
