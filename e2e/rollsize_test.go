package e2e

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"
)

// TestCommittedFilesAreAtLeastRollSize: checkpoints every second, files of
// roll_size 1 MiB (256 KiB for Parquet, which compresses the records about
// 15 times; roll_age 1h): every committed file or object is at least
// roll_size, except the last of each writer (rolled by the stop), and each
// writer rolled some by size, for jsonl and Parquet, on local files and on
// S3. Each writer takes about 800 KB of records per second, less than
// roll_size: a file that reaches roll_size spans checkpoints (with one
// file per checkpoint and writer, the former behaviour, every file would
// be smaller).
func TestCommittedFilesAreAtLeastRollSize(t *testing.T) {
	const n = 300_000
	b := cluster(t)
	for _, tc := range []struct {
		s3     bool
		format string
	}{{false, "jsonl"}, {false, "parquet"}, {true, "jsonl"}, {true, "parquet"}} {
		where := map[bool]string{false: "file", true: "s3"}[tc.s3]
		t.Run(where+"-"+tc.format, func(t *testing.T) {
			spec := jobSpec{Parallelism: 2, Partitions: 2, Interval: time.Second}
			roll := int64(1 << 20)
			if tc.format == "parquet" {
				roll = 256 << 10
			}
			keys := map[string]any{"roll_size": roll, "roll_age": "1h"}
			var j *job
			var dir string
			if tc.s3 {
				j, _, _ = s3Job(t, b, spec, tc.format)
				for k, v := range keys {
					j.spec.Sink[k] = v
				}
				dir = j.out.(*s3Output).mirror
			} else {
				if tc.format == "parquet" {
					for k, v := range parquetSink() {
						keys[k] = v
					}
				}
				spec.Config = map[string]map[string]any{"sink": keys}
				j = newJob(t, b, spec)
				if tc.format == "parquet" {
					j.out = newParquetReader(j.outDir)
				}
				dir = j.outDir
			}
			// About 800 KB/s per writer: a file takes a few checkpoints.
			prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: 10_000})
			p := j.start()
			prod.wait(t, 2*time.Minute)
			j.waitMetric(p, metricRecordsOut, func(v float64) bool { return v >= n }, 100*time.Millisecond, 2*time.Minute)
			j.terminate(p, time.Minute)
			j.requireExactlyOnce(n, 0, "")
			if _, err := j.out.readAll(); err != nil { // the S3 mirror, complete
				t.Fatal(err)
			}
			checkpoints := n / 10_000
			sizes := visibleSizes(t, dir)
			t.Logf("%d files over about %d checkpoints: %v", len(sizes), checkpoints, sizes)
			if problems := smallFiles(sizes, roll, spec.Parallelism); len(problems) > 0 {
				t.Errorf("files under roll_size %d before the last of their writer: %v", roll, problems)
			}
		})
	}
}

// visibleSizes returns the size of every visible file under dir, by name.
func visibleSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[d.Name()] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var writerInName = regexp.MustCompile(`-w(\d+)-`)

// smallFiles lists the files under roll bytes that are not their writer's
// last (by name: names sort by time), and the writers (of writers) with
// fewer than two files: none of theirs rolled by size.
func smallFiles(sizes map[string]int64, roll int64, writers int) []string {
	byWriter := map[string][]string{}
	for name := range sizes {
		w := writerInName.FindStringSubmatch(name)
		if w == nil {
			return []string{name + ": no writer in the name"}
		}
		byWriter[w[1]] = append(byWriter[w[1]], name)
	}
	var out []string
	for w := range writers {
		if len(byWriter[fmt.Sprint(w)]) < 2 {
			out = append(out, fmt.Sprintf("writer %d: %d files, none rolled by size", w, len(byWriter[fmt.Sprint(w)])))
		}
	}
	for _, names := range byWriter {
		slices.Sort(names)
		for _, name := range names[:len(names)-1] {
			if sizes[name] < roll {
				out = append(out, fmt.Sprintf("%s (%d bytes)", name, sizes[name]))
			}
		}
	}
	slices.Sort(out)
	return out
}
