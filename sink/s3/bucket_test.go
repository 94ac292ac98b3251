package s3

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// The records of the bucket tests: record id has the time of hour
// id%3 (+3 from id 5000 on) of 2026-01-01 and the country of id/3%2, so
// that consecutive records go to six buckets in turn.
const testTemplate = "dt={yyyy-MM-dd}/hour={HH}/c={field:c}"

var (
	day       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	countries = []string{"DE", "FR"}
)

func hour(id int) int { return id%3 + 3*(id/5000) }

func bvalue(id int, pad int) []byte {
	return fmt.Appendf(nil, `{"id":%d,"c":"%s","pad":"%s"}`, id, countries[id/3%2], strings.Repeat("x", pad+id%37))
}

func bucketOf(id int) string {
	return fmt.Sprintf("dt=2026-01-01/hour=%02d/c=%s", hour(id), countries[id/3%2])
}

func brec(id, pad int) *record.Record {
	ts := day.Add(time.Duration(hour(id))*time.Hour + time.Duration(id%3000)*time.Second/3)
	return &record.Record{Topic: "orders", Offset: int64(id), Timestamp: ts, Value: bvalue(id, pad)}
}

// writeBuckets writes records [from, to) with w, padded by pad bytes.
func writeBuckets(t *testing.T, w sink.Writer, from, to, pad int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := w.Write(ctx, brec(i, pad)); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

func bucketed(writers int) func(*Config) {
	return func(c *Config) { c.PathTemplate, c.Parallelism = testTemplate, writers }
}

// assertBucketedOnce checks that the visible objects under dir (the job's
// directory) hold each of ids exactly once, each in its bucket, and
// nothing else; objects lists the keys and get reads one.
func assertBucketedOnce(t *testing.T, dir string, objects []string, get func(string) []byte, ids []int) {
	t.Helper()
	got := map[int]int{}
	for _, k := range objects {
		rel := strings.TrimPrefix(k, dir)
		bucket := rel[:max(0, strings.LastIndexByte(rel, '/'))]
		for l := range strings.SplitSeq(strings.TrimSuffix(string(get(k)), "\n"), "\n") {
			var v struct{ ID int }
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("%s: %q: %v", k, l, err)
			}
			if bucketOf(v.ID) != bucket {
				t.Fatalf("%s holds record %d, of bucket %s", k, v.ID, bucketOf(v.ID))
			}
			got[v.ID]++
		}
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("record %d is visible %d times", id, got[id])
		}
		delete(got, id)
	}
	for id, n := range got {
		t.Errorf("record %d is visible %d times, and not expected", id, n)
	}
}

func (f *fakeS3) get(key string) []byte { b, _ := f.object(key); return b }

// TestObjectsGoToTheBucketsOfTheirRecordsExactlyOnce: records of three
// hours and two countries, interleaved, by two writers over several
// checkpoints: one object per bucket and writer, each record once in its
// bucket, CommittedAfter finds them, nothing left behind.
func TestObjectsGoToTheBucketsOfTheirRecordsExactlyOnce(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, bucketed(2))
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	for id := 1; id <= 4; id++ {
		writeBuckets(t, w0, (id-1)*200, id*200, 0)
		writeBuckets(t, w1, 1000+(id-1)*200, 1000+id*200, 0)
		if id == 4 {
			w0.EndInput()
			w1.EndInput()
		}
		cs := append(preCommit(t, w0, checkpoint.ID(id)), preCommit(t, w1, checkpoint.ID(id))...)
		commit(t, s, cs)
		if id < 4 {
			if n := len(f.openUploads()); len(f.keys(jobDir)) != 0 || n != 12 {
				t.Fatalf("after checkpoint %d: visible %v, %d uploads; want the 12 open objects (6 buckets, 2 writers)", id, f.keys(jobDir), n)
			}
		}
	}
	keys := f.keys(jobDir)
	if len(keys) != 12 {
		t.Fatalf("objects %v, want one per bucket and writer", keys)
	}
	assertBucketedOnce(t, jobDir, keys, f.get, append(ids(0, 800), ids(1000, 1800)...))
	assertClean(t, f)
	if after, err := s.CommittedAfter(ctx, 0); err != nil || !slices.Equal(after, keys) {
		t.Fatalf("CommittedAfter(0) = %v, %v; want %v", after, err, keys)
	}
	if !strings.HasPrefix(keys[0], jobDir+"dt=2026-01-01/hour=00/c=DE/part-orders-000000000001-w") {
		t.Fatalf("key %s", keys[0])
	}
}

// TestCrashWithSeveralOpenBucketsResumesExactlyOnce: checkpoint 2 records
// six open objects per writer, with parts and tails; afterwards writer 0
// writes into six new buckets too and pre-commits 3, never completed. The
// restart keeps exactly the uploads and deltas checkpoint 2 needs, the
// writers resume every object, and the stop leaves every record once and
// nothing behind.
func TestCrashWithSeveralOpenBucketsResumesExactlyOnce(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	cfg := func(c *Config) { bucketed(2)(c); c.RollSize = 64 * testPart }
	s := newTestSink(t, f, cfg)
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	writeBuckets(t, w0, 0, 300, 0)
	writeBuckets(t, w1, 1000, 1300, 0)
	checkpointed(t, s, w0, 1)
	checkpointed(t, s, w1, 1)
	writeBuckets(t, w0, 300, 600, 0)
	writeBuckets(t, w1, 1300, 1600, 0)
	restored := append(preCommit(t, w0, 2), preCommit(t, w1, 2)...)
	recorded := map[string]bool{}
	for _, d := range decodeAll(t, restored) {
		if len(d.Opens) != 6 {
			t.Fatalf("checkpoint 2 records %d open objects, want 6 per writer", len(d.Opens))
		}
		for _, o := range d.Opens {
			recorded[o.Key] = true
			if len(o.Parts) == 0 || len(o.Tail) == 0 {
				t.Fatalf("open object %s: want parts and a tail: %+v", o.Key, o)
			}
		}
	}
	writeBuckets(t, w0, 600, 700, 0)
	writeBuckets(t, w0, 5000, 5200, 0)
	preCommit(t, w0, 3) // never completes
	writeBuckets(t, w1, 1600, 1700, 0)
	_, _ = w0.Close(), w1.Close() // the crash
	if n := len(f.openUploads()); n != 18 {
		t.Fatalf("%d uploads before the restart, want 18", n)
	}

	s2 := newTestSink(t, f, cfg)
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if u := f.openUploads(); len(u) != 12 || !allIn(u, recorded) {
		t.Fatalf("uploads after Recover: %v, want the 12 checkpoint 2 records", u)
	}
	if len(f.keys(jobDir)) != 0 {
		t.Fatalf("visible after Recover: %v", f.keys(jobDir))
	}
	r0, r1 := newTestWriter(t, s2, 0), newTestWriter(t, s2, 1)
	writeBuckets(t, r0, 600, 700, 0)
	writeBuckets(t, r0, 5000, 5200, 0)
	writeBuckets(t, r1, 1600, 1700, 0)
	r0.EndInput()
	r1.EndInput()
	cs := append(preCommit(t, r0, 3), preCommit(t, r1, 3)...)
	commit(t, s2, cs)
	keys := f.keys(jobDir)
	assertBucketedOnce(t, jobDir, keys, f.get, slices.Concat(ids(0, 700), ids(1000, 1700), ids(5000, 5200)))
	assertClean(t, f)
	if len(keys) != 18 {
		t.Fatalf("objects %v, want the 12 resumed and 6 new", keys)
	}
	for k := range recorded {
		if !slices.Contains(keys, k) {
			t.Fatalf("the resumed object %s is not among %v", k, keys)
		}
	}
}

func allIn(keys []string, set map[string]bool) bool {
	for _, k := range keys {
		if !set[k] {
			return false
		}
	}
	return true
}

// TestRecoverCompletesEveryOpenObjectOfARemovedWriter: scaled down to one
// writer, writer 1's six open objects are completed at once, each in its
// bucket; recovering again changes nothing.
func TestRecoverCompletesEveryOpenObjectOfARemovedWriter(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, bucketed(2))
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	writeBuckets(t, w0, 0, 100, 0)
	writeBuckets(t, w1, 100, 200, 0)
	restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
	_, _ = w0.Close(), w1.Close()
	for range 2 {
		s2 := newTestSink(t, f, bucketed(1))
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		keys := f.keys(jobDir)
		if len(keys) != 6 || len(f.openUploads()) != 6 {
			t.Fatalf("objects %v, uploads %v; want writer 1's 6 completed, writer 0's 6 open", keys, f.openUploads())
		}
		assertBucketedOnce(t, jobDir, keys, f.get, ids(100, 200))
	}
}

// TestMaxOpenFilesRollsTheLeastRecentlyWrittenObject: with two open
// objects at most, a third bucket rolls the one written least recently.
func TestMaxOpenFilesRollsTheLeastRecentlyWrittenObject(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.PathTemplate, c.MaxOpenFiles = "c={field:c}", 2 })
	w := newTestWriter(t, s, 0)
	for i, c := range []string{"DE", "FR", "DE", "IT", "DE", "FR"} { // IT rolls FR, the second FR rolls IT
		if err := w.Write(ctx, &record.Record{Value: fmt.Appendf(nil, `{"id":%d,"c":"%s"}`, i, c)}); err != nil {
			t.Fatal(err)
		}
	}
	d := decodeAll(t, checkpointed(t, s, w, 1))
	want := []string{jobDir + "c=FR/part-orders-000000000001-w0-1.jsonl", jobDir + "c=IT/part-orders-000000000001-w0-2.jsonl"}
	if got := f.keys(jobDir); !slices.Equal(got, want) || len(d) != 1 || len(d[0].Opens) != 2 {
		t.Fatalf("objects %v, committable %+v; want %v completed and DE, FR open", got, d, want)
	}
}

// TestCheckpointsWithTheFormerSingleOpenObjectAreResumed: a checkpoint
// written before path_template recorded its open object as "open";
// Recover still resumes it.
func TestCheckpointsWithTheFormerSingleOpenObjectAreResumed(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	cs := preCommit(t, w, 1)
	_ = w.Close()
	former, _ := json.Marshal(map[string]any{"open": decodeAll(t, cs)[0].Opens[0]})
	cs[0].Data = former
	s2 := newTestSink(t, f, nil)
	if err := s2.Recover(ctx, cs); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	w2 := newTestWriter(t, s2, 0)
	writeRange(t, w2, 100, 120)
	w2.EndInput()
	checkpointed(t, s2, w2, 2)
	assertExactlyOnce(t, f, ids(0, 120))
	assertClean(t, f)
	if got := f.keys(jobDir); len(got) != 1 || got[0] != jobDir+"part-orders-000000000001-w0-0.jsonl" {
		t.Fatalf("objects %v, want the resumed one", got)
	}
}

// TestCommittedAfterFindsObjectsInBucketsOnEitherSideOfTheFlatNames:
// buckets that sort before "part-" and after it, and objects without a
// bucket (written before a path_template was set): CommittedAfter lists
// exactly those with F after the id.
func TestCommittedAfterFindsObjectsInBucketsOnEitherSideOfTheFlatNames(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	roll := func(tmpl string) func(*Config) {
		return func(c *Config) { c.RollOnCheckpoint, c.PathTemplate = true, tmpl }
	}
	id := checkpoint.ID(0)
	for _, tmpl := range []string{"", "a={field:c}", "z={field:c}"} {
		s := newTestSink(t, f, roll(tmpl))
		if err := s.Recover(ctx, nil); err != nil {
			t.Fatal(err)
		}
		w := newTestWriter(t, s, 0)
		for range 2 {
			id++
			writeBuckets(t, w, int(id)*10, int(id)*10+3, 0)
			checkpointed(t, s, w, id)
		}
		_ = w.Close()
	}
	all := f.keys(jobDir)
	for _, prefix := range []string{jobDir + "a=", jobDir + "part-", jobDir + "z="} {
		if !slices.ContainsFunc(all, func(k string) bool { return strings.HasPrefix(k, prefix) }) {
			t.Fatalf("objects %v: none starts with %s", all, prefix)
		}
	}
	s := newTestSink(t, f, nil)
	for after := range id + 1 {
		var want []string
		for _, k := range all {
			var first checkpoint.ID
			_, _ = fmt.Sscanf(k[strings.LastIndex(k, "part-orders-")+len("part-orders-"):], "%d-", &first)
			if first > after {
				want = append(want, k)
			}
		}
		got, err := s.CommittedAfter(ctx, after)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("CommittedAfter(%d) = %v, %v; want %v", after, got, err, want)
		}
	}
}

func TestPathTemplateMistakesNameTheirKey(t *testing.T) {
	_, err := config.Parse("job.yaml", []byte(jobYAML+"  bucket: out\n  path_template: \"x/{field:c}/{HH\"\n  max_open_files: 0\n"), nil)
	for _, want := range []string{"sink.path_template", "sink.max_open_files"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v; want an error naming %s", err, want)
		}
	}
	j, err := config.Parse("job.yaml", []byte(jobYAML+"  bucket: out\n  path_template: \"dt={yyyy-MM-dd}/hour={HH}\"\n"), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c := j.Sink.Config.(*Config); c.PathTemplate != "dt={yyyy-MM-dd}/hour={HH}" || c.MaxOpenFiles != 32 {
		t.Errorf("config %+v", c)
	}
	f := newFakeS3(testBucket, testPart)
	_, err = New(testConfig(f, func(c *Config) { c.PathTemplate = "_x/{HH}" }), zerolog.Nop())
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), "sink.path_template:") {
		t.Errorf("New: %v", err)
	}
}

// TestDecodeRefusesBucketsOutsideTheJob: an open or rolled key must be
// this job's, in a bucket a template can make.
func TestDecodeRefusesBucketsOutsideTheJob(t *testing.T) {
	n := newNames("out/", "orders", "jsonl")
	good, _ := n.objectKey("dt=1/h=2", 1, 0, 0)
	if _, _, _, ok := n.parseObject(good); !ok || n.bucket(good) != "dt=1/h=2" || n.base(good) != "part-orders-000000000001-w0-0.jsonl" {
		t.Fatalf("%s: bucket %q base %q", good, n.bucket(good), n.base(good))
	}
	for _, bucket := range []string{"..", "a/../b", ".x", "_x", "a//b", "a b"} {
		if key, _ := n.objectKey(bucket, 1, 0, 0); func() bool { _, _, _, ok := n.parseObject(key); return ok }() {
			t.Errorf("%s parsed as an object of the job", key)
		}
	}
	data, _ := json.Marshal(committable{Opens: []*openRec{
		{Key: good, Upload: "u1", Size: 0}, {Key: good, Upload: "u2", Size: 0},
	}})
	if _, err := n.decode(sink.Committable{Checkpoint: 1, Data: data}); !errors.Is(err, sink.ErrBadCommittable) {
		t.Errorf("two open objects in one bucket: %v", err)
	}
}

// TestRealS3BucketsCrashAndResumeExactlyOnce: the crash and resume cycle
// with six open objects in nested buckets (keys with '=' and '/') on the
// real server: the uploads begun after the restored checkpoint are
// aborted, the others resumed from their deltas, and the stop leaves every
// record once in its bucket, no upload and no delta.
func TestRealS3BucketsCrashAndResumeExactlyOnce(t *testing.T) {
	e := newRealEnv(t)
	tmpl := func(c *Config) { c.PathTemplate = testTemplate }
	s := e.sink(tmpl)
	w := newTestWriter(t, s, 0)
	writeBuckets(t, w, 0, 2000, 1000)
	checkpointed(t, s, w, 1)
	writeBuckets(t, w, 2000, 4000, 1000)
	restored := preCommit(t, w, 2)
	recorded := map[string]bool{}
	for _, o := range decodeAll(t, restored)[0].Opens {
		recorded[o.Key] = true
	}
	if len(recorded) != 6 {
		t.Fatalf("checkpoint 2 records %d open objects, want 6", len(recorded))
	}
	writeBuckets(t, w, 5000, 5600, 1000) // six new buckets
	preCommit(t, w, 3)                   // never completes
	writeBuckets(t, w, 4000, 4500, 1000)
	_ = w.Close()
	if u := e.uploads("out/"); len(u) != 12 {
		t.Fatalf("uploads before the restart: %v, want 12", u)
	}

	s2 := e.sink(tmpl)
	if err := s2.Recover(e.ctx(), restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if u := e.uploads(""); len(u) != 6 || !allIn(u, recorded) {
		t.Fatalf("uploads after Recover: %v, want the 6 checkpoint 2 records", u)
	}
	w2 := newTestWriter(t, s2, 0)
	writeBuckets(t, w2, 5000, 5600, 1000)
	writeBuckets(t, w2, 4000, 4500, 1000)
	w2.EndInput()
	checkpointed(t, s2, w2, 3)
	_ = w2.Close()
	keys := e.keys("out/" + jobDir)
	assertBucketedOnce(t, "out/"+jobDir, keys, e.get, slices.Concat(ids(0, 4500), ids(5000, 5600)))
	e.assertClean()
	if len(keys) != 12 {
		t.Fatalf("objects %v, want 6 resumed and 6 new", keys)
	}
	if after, err := s2.CommittedAfter(e.ctx(), 0); err != nil || !slices.Equal(after, keys) {
		t.Fatalf("CommittedAfter(0) = %v, %v; want %v", after, err, keys)
	}
}
