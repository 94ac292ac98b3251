package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/s3test"
)

// ---------------------------------------------------------------------------
// Parquet output, read by pyarrow

// parquetColumns is the Parquet schema of the producer's records (see
// producer_test.go): the id the tests count, and the rest of the record.
var parquetColumns = []map[string]any{
	{"name": "id", "type": "int64"},
	{"name": "ts", "type": "timestamp_ms"},
	{"name": "customer", "type": "string"},
	{"name": "amount", "type": "double"},
	{"name": "pad", "type": "string", "nullable": true},
}

// parquetSink is the sink keys that make a job write Parquet.
func parquetSink() map[string]any {
	return map[string]any{"format": "parquet", "parquet": map[string]any{"columns": parquetColumns, "compression": "zstd"}}
}

// parquetFiles reads the id column of Parquet files with pyarrow
// (scripts/pyarrow, testdata/parquet_ids.py), all in one process: an
// independent reader of the connector's files. A file pyarrow cannot read
// is bad output, not an error of the reader.
func parquetFiles(paths []string) (map[string]parsedFile, error) {
	out := make(map[string]parsedFile, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	cmd := exec.Command("../scripts/pyarrow", append([]string{"python", "testdata/parquet_ids.py"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/pyarrow: %w\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var f struct {
			File  string   `json:"file"`
			IDs   []*int64 `json:"ids"`
			Error string   `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return nil, fmt.Errorf("pyarrow said %.200q: %w", sc.Text(), err)
		}
		var pf parsedFile
		if f.Error != "" {
			if _, serr := os.Stat(f.File); serr != nil {
				continue // gone meanwhile
			}
			pf.bad = append(pf.bad, fmt.Sprintf("%s: pyarrow cannot read it: %s", filepath.Base(f.File), f.Error))
		}
		for i, id := range f.IDs {
			if id == nil {
				pf.bad = append(pf.bad, fmt.Sprintf("%s: row %d has a null id", filepath.Base(f.File), i))
				continue
			}
			pf.ids = append(pf.ids, *id)
		}
		out[f.File] = pf
	}
	return out, sc.Err()
}

// newParquetReader reads the visible Parquet files under dir.
func newParquetReader(dir string) *outputReader {
	r := newOutputReader(dir)
	r.parse = parquetFiles
	return r
}

// ---------------------------------------------------------------------------
// S3 output: the visible objects, mirrored to a local directory

// s3Output is what a reader of the bucket sees: the objects under the
// job's prefix, except the sink's own keys under _connector/. Each read
// lists them, downloads those not seen before (an object is immutable)
// into a local mirror, and reads the mirror as the file sink's output.
type s3Output struct {
	t      *testing.T
	client *minio.Client
	bucket string
	prefix string
	mirror string
	files  *outputReader
}

func newS3Output(t *testing.T, c s3test.Config, bucket, prefix, format string) *s3Output {
	o := &s3Output{t: t, client: s3test.Client(t, c), bucket: bucket, prefix: prefix, mirror: t.TempDir()}
	o.files = newOutputReader(o.mirror)
	if format == "parquet" {
		o.files.parse = parquetFiles
	}
	return o
}

func (o *s3Output) read() (output, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listed := map[string]bool{}
	for obj := range o.client.ListObjects(ctx, o.bucket, minio.ListObjectsOptions{Prefix: o.prefix, Recursive: true}) {
		if obj.Err != nil {
			return output{}, fmt.Errorf("list %s/%s: %w", o.bucket, o.prefix, obj.Err)
		}
		rel := strings.TrimPrefix(obj.Key, o.prefix)
		if strings.HasPrefix(rel, "_connector/") {
			continue
		}
		local := filepath.Join(o.mirror, filepath.FromSlash(rel))
		listed[local] = true
		if st, err := os.Stat(local); err == nil && st.Size() == obj.Size {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return output{}, err
		}
		if err := o.client.FGetObject(ctx, o.bucket, obj.Key, local, minio.GetObjectOptions{}); err != nil {
			return output{}, fmt.Errorf("get %s: %w", obj.Key, err)
		}
	}
	err := filepath.Walk(o.mirror, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !listed[path] {
			return os.Remove(path) // an object that went away: a reader no longer sees it
		}
		return err
	})
	if err != nil {
		return output{}, err
	}
	return o.files.read()
}

func (o *s3Output) readAll() (output, error) { return o.read() }

// s3Leftovers lists what the job left in the bucket besides its output:
// unfinished multipart uploads and the sink's own objects (tail deltas).
// After a final stop there must be none.
func s3Leftovers(t *testing.T, c s3test.Config, bucket, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var left []string
	for u := range s3test.Client(t, c).ListIncompleteUploads(ctx, bucket, prefix, true) {
		if u.Err != nil {
			t.Fatalf("list uploads: %v", u.Err)
		}
		left = append(left, "upload "+u.Key)
	}
	for obj := range s3test.Client(t, c).ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "_connector/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("list: %v", obj.Err)
		}
		left = append(left, "object "+obj.Key)
	}
	return left
}

// s3Job makes a job whose sink is s3Sink's; its output is read from the
// bucket.
func s3Job(t *testing.T, b kafkatest.Brokers, spec jobSpec, format string) (*job, s3test.Config, string) {
	snk, c, bucket := s3Sink(t, format)
	spec.Sink = snk
	j := newJob(t, b, spec)
	j.out = newS3Output(t, c, bucket, "out/", format)
	t.Logf("job %s writes %s objects to bucket %s of %s", j.name, format, bucket, c.Endpoint)
	return j, c, bucket
}

// s3Sink makes a fresh bucket of the test S3 server and returns the
// section of the s3 sink writing to it under out/, in format (jsonl or
// parquet), with 5 MiB parts (the least S3 takes) and objects rolled at
// the first checkpoint a second after they opened; and the server and
// bucket.
func s3Sink(t *testing.T, format string) (map[string]any, s3test.Config, string) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	snk := map[string]any{
		"type": "s3", "bucket": bucket, "prefix": "out/", "endpoint": c.Endpoint, "region": c.Region,
		"access_key_id": c.AccessKey, "secret_access_key": c.SecretKey,
		"format": format, "part_size": "5MiB", "roll_age": "1s",
	}
	if format == "parquet" {
		snk["parquet"] = parquetSink()["parquet"]
	}
	return snk, c, bucket
}
