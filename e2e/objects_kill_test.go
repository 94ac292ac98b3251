package e2e

import (
	"testing"
)

// TestFilesAndObjectsExactlyOnceUnderRandomSIGKILL is
// TestExactlyOnceUnderRandomSIGKILL for the outputs whose files span
// checkpoints (roll_age 1s: most kills land while files are open, so
// restarts cut them back and resume them): Parquet files (read by
// pyarrow), and objects in S3 as jsonl and Parquet, at parallelism 1 and 4.
// For S3, after the final stop no multipart upload and no tail delta of
// the job is left in the bucket.
func TestFilesAndObjectsExactlyOnceUnderRandomSIGKILL(t *testing.T) {
	b := cluster(t)
	for _, tc := range []struct {
		name        string
		s3          bool
		format      string
		parallelism int
	}{
		{"file-parquet-parallelism-1", false, "parquet", 1},
		{"file-parquet-parallelism-4", false, "parquet", 4},
		{"s3-jsonl-parallelism-1", true, "jsonl", 1},
		{"s3-jsonl-parallelism-4", true, "jsonl", 4},
		{"s3-parquet-parallelism-4", true, "parquet", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := jobSpec{Parallelism: tc.parallelism, Partitions: 6}
			if !tc.s3 {
				spec.Config = map[string]map[string]any{"sink": parquetSink()}
				j := newJob(t, b, spec)
				j.out = newParquetReader(j.outDir)
				killAndDrain(t, b, j, producerSpec{})
				return
			}
			j, c, bucket := s3Job(t, b, spec, tc.format)
			killAndDrain(t, b, j, producerSpec{})
			if left := s3Leftovers(t, c, bucket, "out/"); len(left) > 0 {
				t.Errorf("after the final stop the bucket still holds: %v", left)
			}
		})
	}
}
