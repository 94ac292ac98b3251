package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/pgtest"
	"github.com/connector-dev/connector/internal/s3test"
	"github.com/connector-dev/connector/internal/syncbuf"
	"github.com/minio/minio-go/v7"
	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestDevRunsTheKafkaToKafkaExample: `connector dev` runs
// examples/kafka-to-kafka.yaml on the embedded broker (the sink's topic
// created beside the source's), commits transactions while it runs, and
// stops after a final checkpoint.
func TestDevRunsTheKafkaToKafkaExample(t *testing.T) {
	runDevExample(t, "kafka-to-kafka.yaml", "topic orders-clean")
}

// TestDevRunsTheKafkaToPostgresExample: `connector dev` runs
// examples/kafka-to-postgres.yaml against a PostgreSQL database (PG_DSN);
// after the stop, the table holds each record written exactly once.
func TestDevRunsTheKafkaToPostgresExample(t *testing.T) {
	dsn := pgtest.DB(t)
	pgtest.Exec(t, dsn, `CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, amount numeric(10,2), status text, created_at timestamptz)`)
	t.Setenv("PG_DSN", dsn)
	out, log := runDevExample(t, "kafka-to-postgres.yaml", "table orders")
	rows, distinct := pgtest.QueryInt(t, dsn, `SELECT count(*) FROM orders`), pgtest.QueryInt(t, dsn, `SELECT count(DISTINCT id) FROM orders`)
	if rows != int64(out) || distinct != rows {
		t.Errorf("orders holds %d rows (%d distinct ids); the job wrote %d records; its log:\n%s", rows, distinct, out, log)
	}
}

// TestDevRunsTheKafkaToS3Example: `connector dev` runs
// examples/kafka-to-s3.yaml (with roll_age 2s, so that objects become
// visible while it runs) against the test S3 server; after the stop, the
// bucket holds Parquet objects whose rows are each record written exactly
// once, and no unfinished upload.
func TestDevRunsTheKafkaToS3Example(t *testing.T) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	example, err := os.ReadFile("../../examples/kafka-to-s3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(example, []byte("roll_age: 1m")) {
		t.Fatal("examples/kafka-to-s3.yaml has no roll_age: 1m to shorten")
	}
	path := filepath.Join(t.TempDir(), "kafka-to-s3.yaml")
	if err := os.WriteFile(path, bytes.Replace(example, []byte("roll_age: 1m"), []byte("roll_age: 2s"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("S3_BUCKET", bucket)
	t.Setenv("S3_ENDPOINT", c.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", c.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", c.SecretKey)
	out, log := runDevExample(t, path, "s3://"+bucket+"/lake/orders-to-s3/")

	ctx := context.Background()
	cl := s3test.Client(t, c)
	ids := map[int64]int{}
	rows := 0
	for obj := range cl.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "lake/orders-to-s3/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		r, err := cl.GetObject(ctx, bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s is not a Parquet file: %v", obj.Key, err)
		}
		pr := parquet.NewReader(f)
		row := make([]parquet.Row, 1)
		for {
			n, err := pr.ReadRows(row)
			if n == 1 {
				ids[row[0][0].Int64()]++
				rows++
			}
			if err != nil {
				break
			}
		}
	}
	if rows != out || len(ids) != rows {
		t.Errorf("the objects hold %d rows (%d distinct ids); the job wrote %d records; its log:\n%s", rows, len(ids), out, log)
	}
	for u := range cl.ListIncompleteUploads(ctx, bucket, "lake/", true) {
		t.Errorf("unfinished upload after the stop: %s (%v)", u.Key, u.Err)
	}
}

// runDevExample runs `connector dev` on an example (a name in examples/,
// or a path) until it committed two transactions (or objects) to where,
// stops it, and returns how many records it wrote and its log.
func runDevExample(t *testing.T, example, where string) (int, string) {
	t.Helper()
	return runDevExampleOn(t, example, where, nil)
}

// TestDevCreatesTheTopicsADataDirLacks: kfake seeds topics only into a
// fresh data dir, so on the one the quick start's first command left
// (./data/dev-kafka, holding only orders), the Kafka-to-Kafka example's
// output topic was never created and dev exited 1 ("topic orders-clean
// does not exist").
func TestDevCreatesTheTopicsADataDirLacks(t *testing.T) {
	runDevExampleOn(t, "kafka-to-kafka.yaml", "topic orders-clean", func(data string) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(data), kfake.SeedTopics(4, "orders"))
		if err != nil {
			t.Fatal(err)
		}
		c.Close() // its data dir now holds orders only
	})
}

// runDevExampleOn is runDevExample with prepare, if not nil, run on the
// embedded broker's data dir before dev starts.
func runDevExampleOn(t *testing.T, example, where string, prepare func(data string)) (int, string) {
	t.Helper()
	path := example
	if !filepath.IsAbs(example) {
		var err error
		if path, err = filepath.Abs("../../examples/" + example); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if prepare != nil {
		prepare(filepath.Join(dir, "kafka"))
	}
	t.Chdir(dir) // the example's data dirs are relative
	t.Setenv("HTTP_ADDR", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--config", path, "--data", filepath.Join(dir, "kafka"), "--rate", "5000"}, &out, &errOut)
	}()
	progress := regexp.MustCompile(`(\d+) (?:transactions|objects) committed to ` + regexp.QuoteMeta(where) + `\n`)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := progress.FindAllStringSubmatch(out.String(), -1); len(m) > 0 {
			if n, _ := strconv.Atoi(m[len(m)-1][1]); n >= 2 {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("dev exited %d before committing:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no transactions committed within a minute:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("dev exited %d after the stop:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if !regexp.MustCompile(`\nstatus at http://127\.0\.0\.1:[1-9]\d*/ `).MatchString(out.String()) {
		t.Errorf("dev did not print where its status is served:\n%s", out.String())
	}
	final := regexp.MustCompile(`stopped after a final checkpoint: (\d+) records in, (\d+) out, \d+ checkpoints, (\d+) (?:transactions|objects) committed to ` + regexp.QuoteMeta(where) + `\n$`)
	m := final.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no final summary:\n%s", out.String())
	}
	in, _ := strconv.Atoi(m[1])
	written, _ := strconv.Atoi(m[2])
	if in == 0 || written == 0 {
		t.Errorf("nothing read or written: %s", m[0])
	}
	return written, errOut.String()
}
