package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/parquet-go/parquet-go"
)

// Kafka to S3 (issue 14): the contenders drain the ~100 B topic of the file
// drains (bench/cmd/load's orders layout) into a bucket of the S3 server
// (versitygw, scripts/s3), made fresh for each run and deleted after it:
//
//   - raw-s3, the ceiling: bench/cmd/s3raw, franz-go consumers uploading
//     the values as jsonl with minio-go multipart uploads (16 MiB parts,
//     objects of 128 MiB), nothing else;
//   - connector-s3-jsonl, connector-s3-parquet: the connector's s3 sink
//     (part_size 16 MiB, roll_size --s3-roll-size-mib (128 MiB), roll_age 5m), exactly-once
//     checkpoints every second; parquet with the columns of the values
//     (s3Columns), zstd;
//   - connector-file-parquet: the file sink with the same Parquet settings
//     into a local directory, beside Flink on local files;
//   - flink-parquet: bench/flink KafkaToParquet, FileSink in bulk format
//     (flink-parquet's ParquetWriterFactory, the same columns, zstd),
//     exactly-once checkpoints every second; into the bucket through
//     flink-s3-fs-hadoop (--flink-parquet-to s3, the default) or into a
//     local directory (--flink-parquet-to local).
//
// A drain starts at the contender's first output: the first object or
// multipart upload in the bucket, or file in the directory (hidden ones
// too), and for the connector at the latest when connector_records_out_total
// first moves (its s3 sink begins an upload with its first part or
// checkpoint). It ends when the visible output holds every record: jsonl,
// the visible bytes reach records x (size + 1); Parquet, the row counts in
// the footers of the visible files reach the record count (a visible file
// is complete and immutable: each is read once). The connector's sink
// spans checkpoints, so its last objects roll only at the job's stop:
// once connector_records_out_total reaches the record count the bench
// sends SIGTERM, and the final checkpoint rolls and commits them. Flink's
// bulk format rolls a file at every checkpoint: its output becomes visible
// as it goes. raw-s3 times itself (first record read to last object
// completed).
//
// Visible output: S3 keys under out/ with no path segment that starts
// with '.' or '_' (the connector's deltas are under out/_connector/; S3A's
// directory markers end in '/'); local: as the file drains. After each run
// every visible file is read back whole: each id 0..N-1 exactly once
// (jsonl: every line; Parquet: the id column, read with parquet-go), and
// the files are counted and measured.
//
// The S3 server's CPU time during the drain (its pid, from --s3-pid) is a
// column of its own and is left out of "other CPU s".

// s3Names are the Kafka-to-S3 experiments, in the order they take turns.
// They run only when --only names them.
var s3Names = []string{"raw-s3", "connector-s3-jsonl", "connector-s3-parquet", "connector-file-parquet", "flink-parquet"}

// s3Prefix starts every key the contenders write.
const s3Prefix = "out/"

// s3PartSize is the part size of every S3 contender; their roll size is
// --s3-roll-size-mib (128 by default).
const s3PartSize = 16 << 20

// s3Columns are the Parquet columns of bench/cmd/load's values (orders
// layout), as the connector's parquet: section and KafkaToParquet name them.
var s3Columns = []struct{ name, typ string }{
	{"id", "string"}, {"u", "string"}, {"h", "string"}, {"amount", "double"}, {"status", "string"}, {"p", "string"},
}

// s3State is the bench's S3 client.
type s3State struct {
	s3c *minio.Client
}

func (b *bench) s3() (*minio.Client, error) {
	if b.s3c != nil {
		return b.s3c, nil
	}
	if b.o.s3Endpoint == "" {
		return nil, errors.New("the S3 experiments need --s3-endpoint (bench/run starts scripts/s3 --name bench)")
	}
	u, err := url.Parse(b.o.s3Endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--s3-endpoint %q: want http://host:port", b.o.s3Endpoint)
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(b.o.s3AccessKey, b.o.s3SecretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       b.o.s3Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, err
	}
	b.s3c = c
	return c, nil
}

// s3Env is the contenders' S3 credentials.
func (b *bench) s3Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + b.o.s3AccessKey, "AWS_SECRET_ACCESS_KEY=" + b.o.s3SecretKey, "AWS_REGION=" + b.o.s3Region}
}

// runS3 runs the Kafka-to-S3 experiments on the topics of --sizes, the
// contenders taking turns.
func (b *bench) runS3() error {
	o := &b.o
	var names []string
	for _, n := range s3Names {
		if o.only[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	needS3 := slices.ContainsFunc(names, func(n string) bool {
		return n != "connector-file-parquet" && (n != "flink-parquet" || o.flinkParquetTo == "s3")
	})
	if needS3 {
		if _, err := b.s3(); err != nil {
			return err
		}
		if o.s3PID <= 0 {
			b.log("no --s3-pid: the S3 server's CPU is not measured (and counts as other processes')")
		}
	}
	flinkWhere := "S3"
	if o.flinkParquetTo == "local" {
		flinkWhere = "local files"
	}
	labels := map[string]string{
		"raw-s3":                 "raw franz-go + minio-go multipart (jsonl)",
		"connector-s3-jsonl":     "connector s3 jsonl, exactly-once 1s",
		"connector-s3-parquet":   "connector s3 parquet, exactly-once 1s",
		"connector-file-parquet": "connector file parquet (local files), exactly-once 1s",
		"flink-parquet":          "Flink 2.2 FileSink parquet (" + flinkWhere + "), exactly-once 1s",
	}
	for _, size := range o.sizes {
		n := o.records
		if size == 1000 {
			n = o.largeRecords
		}
		t, err := b.load(n, size, "bench")
		if err != nil {
			return err
		}
		section := fmt.Sprintf("s3 drain %s x %d B", human(float64(t.Records)), t.Size)
		var specs []spec
		for _, name := range names {
			s := spec{section: section, name: name, label: labels[name], topic: t, parallelism: o.parallelism,
				mode: "exactly_once", interval: time.Second, s3: true, format: "jsonl"}
			switch name {
			case "raw-s3":
				s.kind = "s3raw"
			case "connector-s3-jsonl":
				s.kind = "connector"
			case "connector-s3-parquet":
				s.kind, s.format = "connector", "parquet"
			case "connector-file-parquet":
				s.kind, s.format, s.local = "connector", "parquet", true
			case "flink-parquet":
				s.kind, s.format, s.local = "flink", "parquet", o.flinkParquetTo == "local"
			}
			specs = append(specs, s)
		}
		for _, r := range b.rounds(specs, b.steadyDrain) {
			b.record(r)
		}
	}
	return nil
}

// s3SinkConfig is the connector's sink section for an S3 experiment; the
// credentials come from the environment (s3Env).
func (b *bench) s3SinkConfig(s spec, dir string) string {
	var c string
	if s.local {
		c = fmt.Sprintf("type: file\n  path: %s\n  format: %s\n  roll_size: %dMiB\n  roll_age: 5m", filepath.Join(dir, "out"), s.format, b.o.s3RollSize)
	} else {
		c = fmt.Sprintf("type: s3\n  bucket: %s\n  prefix: %s\n  endpoint: %s\n  region: %s\n  format: %s\n  part_size: 16MiB\n  roll_size: %dMiB\n  roll_age: 5m",
			s.bucket, s3Prefix, b.o.s3Endpoint, b.o.s3Region, s.format, b.o.s3RollSize)
	}
	if s.format == "parquet" {
		c += "\n  parquet:\n    compression: zstd\n    columns:"
		for _, col := range s3Columns {
			c += fmt.Sprintf("\n      - {name: %s, type: %s}", col.name, col.typ)
		}
	}
	return c
}

// bucketName is a fresh bucket for a run of s.
func bucketName(s spec) string {
	return fmt.Sprintf("bench-%s-%s", s.name, strings.ReplaceAll(time.Now().UTC().Format("150405.000"), ".", ""))
}

func (b *bench) makeBucket(bucket string) error {
	c, err := b.s3()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: b.o.s3Region}); err != nil {
		return fmt.Errorf("make bucket %s: %w", bucket, err)
	}
	return nil
}

// dropBucket deletes a run's bucket: its objects, its unfinished uploads,
// the bucket.
func (b *bench) dropBucket(bucket string) {
	c, err := b.s3()
	if err != nil || bucket == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	objs := make(chan minio.ObjectInfo)
	go func() {
		defer close(objs)
		for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err == nil {
				objs <- o
			}
		}
	}()
	for e := range c.RemoveObjects(ctx, bucket, objs, minio.RemoveObjectsOptions{}) {
		b.log("delete %s/%s: %v", bucket, e.ObjectName, e.Err)
	}
	for u := range c.ListIncompleteUploads(ctx, bucket, "", true) {
		if u.Err == nil {
			_ = c.RemoveIncompleteUpload(ctx, bucket, u.Key)
		}
	}
	if err := c.RemoveBucket(ctx, bucket); err != nil {
		b.log("delete bucket %s: %v", bucket, err)
	}
}

// outFile is one visible output file (a local file or an object).
type outFile struct {
	name string // path or key
	size int64
}

// watcher follows a run's output: whether it began, and how much of it is
// visible (bytes, and for Parquet the rows of the footers).
type watcher struct {
	b       *bench
	s       spec
	dir     string           // local output directory
	rows    map[string]int64 // Parquet: rows of each visible file seen
	started bool
	files   []outFile // visible, at the last poll
}

func (w *watcher) local() bool { return w.s.local }

// visibleKey reports whether an S3 key is output: under s3Prefix, no
// segment starting with '.' or '_', not a directory marker.
func visibleKey(key string) bool {
	rest, ok := strings.CutPrefix(key, s3Prefix)
	if !ok || rest == "" || strings.HasSuffix(key, "/") {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if strings.HasPrefix(seg, ".") || strings.HasPrefix(seg, "_") {
			return false
		}
	}
	return true
}

// poll lists the output; done is true once the visible output holds every
// record.
func (w *watcher) poll() (done bool, err error) {
	w.files = w.files[:0]
	if w.local() {
		if !w.started {
			_ = filepath.WalkDir(w.dir, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					w.started = true
					return filepath.SkipAll
				}
				return nil
			})
		}
		err = walkVisible(w.dir, func(path string, d os.DirEntry) error {
			info, err := d.Info()
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			w.files = append(w.files, outFile{path, info.Size()})
			return nil
		})
	} else {
		c, _ := w.b.s3()
		ctx, cancel := context.WithTimeout(w.b.ctx, 30*time.Second)
		defer cancel()
		any := false
		for o := range c.ListObjects(ctx, w.s.bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				return false, o.Err
			}
			any = true
			if visibleKey(o.Key) {
				w.files = append(w.files, outFile{o.Key, o.Size})
			}
		}
		if !w.started && !any {
			res, err := minio.Core{Client: c}.ListMultipartUploads(ctx, w.s.bucket, "", "", "", "", 1)
			if err != nil {
				return false, err
			}
			any = len(res.Uploads) > 0
		}
		w.started = w.started || any
	}
	if err != nil {
		return false, err
	}
	if w.s.format != "parquet" {
		var total int64
		for _, f := range w.files {
			total += f.size
		}
		return total >= w.s.expectedBytes(), nil
	}
	var rows int64
	for _, f := range w.files {
		n, ok := w.rows[f.name]
		if !ok {
			if n, err = w.footerRows(f); err != nil {
				return false, fmt.Errorf("%s: %w", f.name, err)
			}
			w.rows[f.name] = n
		}
		rows += n
	}
	return rows >= w.s.topic.Records, nil
}

// footerRows reads the row count of a visible Parquet file's footer.
func (w *watcher) footerRows(f outFile) (int64, error) {
	r, closer, err := w.open(f, false)
	if err != nil {
		return 0, err
	}
	defer closer()
	pf, err := parquet.OpenFile(r, f.size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, err
	}
	return pf.NumRows(), nil
}

// open opens a visible file for reading at offsets; whole reads an object
// into memory at once (verification) instead of with a request per read.
func (w *watcher) open(f outFile, whole bool) (io.ReaderAt, func(), error) {
	if w.local() {
		fh, err := os.Open(f.name)
		if err != nil {
			return nil, nil, err
		}
		return fh, func() { fh.Close() }, nil
	}
	c, _ := w.b.s3()
	obj, err := c.GetObject(w.b.ctx, w.s.bucket, f.name, minio.GetObjectOptions{})
	if err != nil {
		return nil, nil, err
	}
	if !whole {
		return obj, func() { obj.Close() }, nil
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, nil, err
	}
	return bytes.NewReader(data), func() {}, nil
}

// reader opens a visible file for reading from its start.
func (w *watcher) reader(f outFile) (io.ReadCloser, error) {
	if w.local() {
		return os.Open(f.name)
	}
	c, _ := w.b.s3()
	return c.GetObject(w.b.ctx, w.s.bucket, f.name, minio.GetObjectOptions{})
}

// idChecker counts the ids of the output against 0..n-1.
type idChecker struct {
	v    verification
	n    int64
	seen []uint64
}

func newIDChecker(n int64) *idChecker { return &idChecker{n: n, seen: make([]uint64, (n+63)/64)} }

func (c *idChecker) add(id int64, ok bool) {
	c.v.Lines++
	switch {
	case !ok || id < 0 || id >= c.n:
		c.v.Malformed++
	case c.seen[id/64]&(1<<(id%64)) != 0:
		c.v.Duplicates++
	default:
		c.seen[id/64] |= 1 << (id % 64)
		c.v.Distinct++
	}
}

// verifyOutput reads every visible file back: jsonl lines, or the id
// column of the Parquet files ("r" and ten digits).
func (w *watcher) verifyOutput() (verification, error) {
	c := newIDChecker(w.s.topic.Records)
	for _, f := range w.files {
		c.v.Files++
		var err error
		if w.s.format == "parquet" {
			err = w.verifyParquet(f, c)
		} else {
			err = w.verifyLines(f, c)
		}
		if err != nil {
			return c.v, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	c.v.Missing = c.n - c.v.Distinct
	return c.v, nil
}

func (w *watcher) verifyLines(f outFile, c *idChecker) error {
	rc, err := w.reader(f)
	if err != nil {
		return err
	}
	defer rc.Close()
	r := bufio.NewReaderSize(rc, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			c.add(0, false)
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if len(line) > 0 {
			c.add(lineID(line))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (w *watcher) verifyParquet(f outFile, c *idChecker) error {
	r, closer, err := w.open(f, true)
	if err != nil {
		return err
	}
	defer closer()
	pf, err := parquet.OpenFile(r, f.size)
	if err != nil {
		return err
	}
	col, ok := pf.Schema().Lookup("id")
	if !ok {
		return errors.New("no id column")
	}
	buf := make([]parquet.Value, 4096)
	var rows int64
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[col.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				pages.Close()
				return err
			}
			vr := p.Values()
			for {
				n, err := vr.ReadValues(buf)
				for _, v := range buf[:n] {
					c.add(parquetID(v.ByteArray()))
					rows++
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					parquet.Release(p)
					pages.Close()
					return err
				}
			}
			parquet.Release(p)
		}
		pages.Close()
	}
	if rows != pf.NumRows() {
		return fmt.Errorf("read %d ids, the footer says %d rows", rows, pf.NumRows())
	}
	return nil
}

// parquetID parses an id value ("r0000000042").
func parquetID(b []byte) (int64, bool) {
	if len(b) != 11 || b[0] != 'r' {
		return 0, false
	}
	id, err := strconv.ParseInt(string(b[1:]), 10, 64)
	return id, err == nil
}

// s3Drain runs one Kafka-to-S3 contender until its visible output holds
// every record, then verifies it and deletes the bucket.
func (b *bench) s3Drain(s spec) *result {
	if !s.local {
		s.bucket = bucketName(s)
	}
	made := false
	dir, r, ok := b.beginWith(s, func() error {
		if s.bucket == "" {
			return nil
		}
		err := b.makeBucket(s.bucket)
		made = err == nil
		return err
	})
	if s.bucket != "" {
		r.Destination = "s3://" + s.bucket + "/" + s3Prefix
		if made && !b.o.keep {
			defer b.dropBucket(s.bucket)
		}
	} else {
		r.Destination = filepath.Join(dir, "out")
	}
	r.Format = s.format
	if !ok {
		return r
	}
	w := &watcher{b: b, s: s, dir: filepath.Join(dir, "out"), rows: map[string]int64{}}
	busy0, broker0, s30 := cpuBusy(), pidCPU(b.o.brokerPID), pidCPU(b.o.s3PID)
	p, addr, err := b.launchS3(s, dir)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.kill()
	if s.kind == "s3raw" {
		b.finishRaw(r, p, busy0, broker0, s)
		if r.Err != "" {
			return r
		}
		r.S3CPU = (pidCPU(b.o.s3PID) - s30).Seconds()
		r.OtherCPU = max(0, r.OtherCPU-r.S3CPU)
		b.s3Finish(r, w)
		return r
	}

	N := s.topic.Records
	deadline := time.Now().Add(b.timeout(s.topic))
	var (
		first, written, end        time.Time
		cpuFirst, final            usage
		busyFirst, brokerFirst, s3 time.Duration
		termSent                   time.Time
	)
	gate := scrapeGate{total: N}
	mark := func() {
		first = time.Now()
		cpuFirst, _ = p.sample()
		busyFirst, brokerFirst, s3 = cpuBusy(), pidCPU(b.o.brokerPID), pidCPU(b.o.s3PID)
	}
	for {
		if b.ctx.Err() != nil {
			r.Err = "interrupted"
			return r
		}
		if time.Now().After(deadline) {
			r.Err = fmt.Sprintf("not drained after %s", b.timeout(s.topic))
			return r
		}
		alive := p.alive()
		if s.kind == "connector" && written.IsZero() && alive {
			if m, out, ok := gate.scrape(addr); ok {
				if out > 0 && first.IsZero() {
					mark()
				}
				if out >= N {
					// The sink spans checkpoints: its open files roll at the
					// final checkpoint of the stop.
					written = time.Now()
					r.Metrics = m
					termSent = time.Now()
					p.signal(syscall.SIGTERM)
				}
			}
		}
		done, err := w.poll()
		if err != nil {
			b.log("%s: %v", s.label, err)
		} else {
			if first.IsZero() && w.started {
				mark()
			}
			if done {
				end = time.Now()
				final, _ = p.sample()
				break
			}
		}
		if !alive {
			r.Err = fmt.Sprintf("exited (%v) before every record was visible; see %s", p.err, filepath.Join(dir, "contender.log"))
			return r
		}
		if !termSent.IsZero() && time.Since(termSent) > 2*time.Minute {
			r.Err = "not every record visible 2 min after SIGTERM"
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	busyEnd, brokerEnd, s3End := cpuBusy(), pidCPU(b.o.brokerPID), pidCPU(b.o.s3PID)
	if !written.IsZero() {
		r.Written = written.Sub(first).Seconds()
		if r.Written > 0 {
			r.WrittenPerS = float64(N) / r.Written
		}
	}
	b.measure(r, p, s, first, end, cpuFirst, final, busyFirst, brokerFirst, busyEnd, brokerEnd)
	if b.o.s3PID > 0 && !s.local {
		r.S3CPU = (s3End - s3).Seconds()
		r.OtherCPU = max(0, r.OtherCPU-r.S3CPU)
	}
	grace := 60 * time.Second
	if s.kind == "flink" {
		grace = 20 * time.Second
	}
	if !p.stop(grace) {
		b.log("%s did not stop within %s after SIGTERM; killed", s.label, grace)
	}
	var cps []checkpointDone
	if s.kind == "connector" {
		cps = connectorCheckpoints(filepath.Join(dir, "contender.log"))
		r.Note = strings.TrimSpace(r.Note + " " + logProblems(filepath.Join(dir, "contender.log")))
	} else {
		cps = flinkCheckpoints(filepath.Join(dir, "contender.log.flink"))
	}
	b.checkpointStats(r, cps, end)
	b.s3Finish(r, w)
	return r
}

// s3Finish counts and measures the visible files, reads them back and
// tidies the run's local files up.
func (b *bench) s3Finish(r *result, w *watcher) {
	if _, err := w.poll(); err != nil {
		r.Verified = "verification failed: " + err.Error()
		return
	}
	if r.S3CPU > 0 {
		r.S3CPUPerM = r.S3CPU / (float64(w.s.topic.Records) / 1e6)
	}
	r.Files = len(w.files)
	for i, f := range w.files {
		r.FilesBytes += f.size
		if i == 0 || f.size < r.FileMinBytes {
			r.FileMinBytes = f.size
		}
		r.FileMaxBytes = max(r.FileMaxBytes, f.size)
	}
	v, err := w.verifyOutput()
	if err != nil {
		r.Verified = "verification failed: " + err.Error()
	} else {
		r.Check = &v
		if v.ExactlyOnce(w.s.topic.Records) {
			r.Verified = "exactly once"
		} else {
			r.Verified = v.String()
		}
	}
	if !b.o.keep {
		for _, d := range []string{"out", "data", "checkpoints", "tmp"} {
			_ = os.RemoveAll(filepath.Join(r.Dir, d))
		}
	}
}

// launchS3 starts an S3 experiment's contender.
func (b *bench) launchS3(s spec, dir string) (*proc, string, error) {
	logPath := filepath.Join(dir, "contender.log")
	switch s.kind {
	case "s3raw":
		p, err := start(s.name, logPath, b.s3Env(), filepath.Join(b.o.bin, "s3raw"), "--brokers", b.o.brokers,
			"--topic", s.topic.Name, "--records", strconv.FormatInt(s.topic.Records, 10),
			"--clients", strconv.Itoa(s.parallelism), "--endpoint", b.o.s3Endpoint, "--bucket", s.bucket,
			"--prefix", s3Prefix, "--region", b.o.s3Region,
			"--part-size", strconv.Itoa(s3PartSize), "--roll-size", strconv.Itoa(b.o.s3RollSize<<20))
		return p, "", err
	case "connector":
		return b.launch(s, dir, false, "contender.log")
	case "flink":
		if b.o.flinkParquetCP == "" {
			return nil, "", errors.New("no --flink-parquet-classpath (bench/run sets it)")
		}
		tmp := filepath.Join(dir, "tmp")
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, "", err
		}
		out := filepath.Join(dir, "out")
		if !s.local {
			out = "s3://" + s.bucket + "/" + strings.TrimSuffix(s3Prefix, "/")
		}
		// java.io.tmpdir: where Flink's S3 writer buffers the parts it
		// has not uploaded yet (io.tmp.dirs), inside the run directory.
		p, err := start(s.name, logPath, b.s3Env(), b.o.java, "-Xmx"+b.o.flinkHeap, "-Dbench.log="+logPath+".flink",
			"-Djava.io.tmpdir="+tmp, "-Daws.java.v1.disableDeprecationAnnouncement=true",
			"-cp", b.o.flinkParquetCP, "dev.connector.bench.KafkaToParquet",
			"--brokers", b.o.brokers, "--topic", s.topic.Name, "--out", out,
			"--s3-endpoint", b.o.s3Endpoint, "--s3-region", b.o.s3Region, "--part-size", strconv.Itoa(s3PartSize),
			"--checkpoints", filepath.Join(dir, "checkpoints"), "--parallelism", strconv.Itoa(s.parallelism),
			"--interval-ms", strconv.FormatInt(s.interval.Milliseconds(), 10),
			"--group", "bench-flink-"+filepath.Base(dir))
		return p, "", err
	}
	return nil, "", fmt.Errorf("unknown kind %q", s.kind)
}

// writeS3 writes the Kafka-to-S3 tables.
func (b *bench) writeS3(w *strings.Builder) {
	for _, sec := range b.sections("s3 drain") {
		rs := b.in(sec)
		raw := find(rs, "raw-s3")
		fmt.Fprintf(w, "### Kafka to S3: %s (%s -> a fresh bucket of versitygw, or local files)\n\n", strings.TrimPrefix(sec, "s3 "), rs[0].Topic.Name)
		fmt.Fprintln(w, "| contender | format | records/s | range (runs) | MB/s | x raw-s3 | records/s written | CPU s / M records | records / CPU s | peak RSS MiB | S3 server CPU s / M | files | mean file MiB | min-max file MiB | output MiB | checkpoints | ckpt p50 ms | ckpt p99 ms | start-up s | drain s | output | other CPU s |")
		fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|")
		var notes []string
		for _, r := range rs {
			if r.Err != "" {
				fmt.Fprintf(w, "| %s | failed: %s ||||||||||||||||||||\n", r.Label, r.Err)
				continue
			}
			label := r.Label
			if r.Note != "" {
				notes = append(notes, r.Note)
				label += fmt.Sprintf(" (%d)", len(notes))
			}
			written, x, s3cpu, mean := "-", "-", "-", "-"
			if r.WrittenPerS > 0 {
				written = f0(r.WrittenPerS)
			}
			if raw != nil && raw.RecordsPerS > 0 {
				x = fmt.Sprintf("%.2fx", r.RecordsPerS/raw.RecordsPerS)
			}
			if r.S3CPUPerM > 0 {
				s3cpu = f2(r.S3CPUPerM)
			}
			if r.Files > 0 {
				mean = f2(float64(r.FilesBytes) / float64(r.Files) / (1 << 20))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s-%s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				label, r.Format, f0(r.RecordsPerS), spread(r, human), f1(r.MBPerS), x, written, f2(r.CPUPerM), f0(r.RecPerCPU), f0(r.PeakRSSMB),
				s3cpu, r.Files, mean, f2(float64(r.FileMinBytes)/(1<<20)), f2(float64(r.FileMaxBytes)/(1<<20)), f1(float64(r.FilesBytes)/(1<<20)),
				ckptCount(r), ckpt(r, f0, r.CkptP50), ckpt(r, f0, r.CkptP99), f2(r.Startup), f2(r.Drain), r.Verified, f1(r.OtherCPU))
		}
		fmt.Fprintln(w)
		for i, n := range notes {
			fmt.Fprintf(w, "(%d) %s\n", i+1, n)
		}
		if len(notes) > 0 {
			fmt.Fprintln(w)
		}
	}
}

// s3Targets are issue 14's targets, for writeTargets.
func (b *bench) s3Targets() [][3]string {
	var rows [][3]string
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	meanSize := func(r *result) float64 { return float64(r.FilesBytes) / float64(max(1, r.Files)) }
	for _, sec := range b.sections("s3 drain") {
		rs := b.in(sec)
		raw, flink := find(rs, "raw-s3"), find(rs, "flink-parquet")
		for _, name := range []string{"connector-s3-jsonl", "connector-s3-parquet"} {
			c := find(rs, name)
			if c == nil || raw == nil || raw.RecordsPerS <= 0 {
				continue
			}
			x := c.RecordsPerS / raw.RecordsPerS
			rows = append(rows, [3]string{fmt.Sprintf("%s: %s >= 0.7x the ceiling's records/s (raw-s3, jsonl)", sec, name),
				fmt.Sprintf("%.2fx (%s vs %s records/s)", x, f0(c.RecordsPerS), f0(raw.RecordsPerS)), yes(x >= 0.7)})
		}
		if flink == nil {
			continue
		}
		// Flink's peer: the connector writing where Flink wrote.
		peer := find(rs, "connector-s3-parquet")
		if strings.Contains(flink.Label, "local") {
			peer = find(rs, "connector-file-parquet")
		}
		for _, c := range []*result{find(rs, "connector-s3-parquet"), find(rs, "connector-file-parquet")} {
			if c == nil || flink.RecPerCPU <= 0 || flink.Files == 0 || c.Files == 0 {
				continue
			}
			where := ""
			if c != peer {
				where = " (not Flink's destination)"
			}
			x := c.RecPerCPU / flink.RecPerCPU
			rows = append(rows, [3]string{fmt.Sprintf("%s: %s records per CPU-second >= 5x Flink's%s", sec, c.Name, where),
				fmt.Sprintf("%.1fx (%s vs %s)", x, f0(c.RecPerCPU), f0(flink.RecPerCPU)), yes(x >= 5)})
			y := meanSize(c) / meanSize(flink)
			rows = append(rows, [3]string{fmt.Sprintf("%s: %s files >= 100x larger than Flink's at 1 s checkpoints%s", sec, c.Name, where),
				fmt.Sprintf("%.0fx (mean %s MiB in %d files vs %s MiB in %d)", y, f2(meanSize(c)/(1<<20)), c.Files, f2(meanSize(flink)/(1<<20)), flink.Files), yes(y >= 100)})
		}
	}
	return rows
}
