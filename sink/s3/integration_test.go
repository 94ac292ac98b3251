package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/internal/s3test"
	"github.com/connector-dev/connector/sink"
)

// These tests run against the real S3 server of the test run (versitygw,
// internal/s3test): real multipart uploads with 5 MiB parts. Like every
// test that needs the server, they fail when S3_ENDPOINT is unset.

const mib = 1 << 20

// realEnv is a fresh bucket on the test server, and a client to look.
type realEnv struct {
	t      *testing.T
	srv    s3test.Config
	bucket string
	core   *minio.Core
}

func newRealEnv(t *testing.T) realEnv {
	srv := s3test.Server(t)
	return realEnv{t: t, srv: srv, bucket: s3test.Bucket(t, srv), core: s3test.Core(t, srv)}
}

func (e realEnv) config(mod func(*Config)) Config {
	cfg := Config{
		Bucket: e.bucket, Prefix: "out/",
		Config: s3conn.Config{Endpoint: e.srv.Endpoint, Region: e.srv.Region, AccessKeyID: e.srv.AccessKey, SecretAccessKey: config.NewSecret(e.srv.SecretKey)},
		Job:    testJob, Parallelism: 1, PartSize: 5 * config.MiB, RollSize: 12 * config.MiB, RollAge: time.Hour,
	}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

func (e realEnv) sink(mod func(*Config)) *Sink {
	e.t.Helper()
	s, err := New(e.config(mod), zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.WarnLevel))
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	return s
}

func (e realEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e.t.Cleanup(cancel)
	return ctx
}

// keys lists the objects under prefix.
func (e realEnv) keys(prefix string) []string {
	e.t.Helper()
	var out []string
	for o := range e.core.Client.ListObjects(e.ctx(), e.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			e.t.Fatalf("list %s: %v", prefix, o.Err)
		}
		out = append(out, o.Key)
	}
	slices.Sort(out)
	return out
}

// uploads lists the unfinished multipart uploads under prefix.
func (e realEnv) uploads(prefix string) []string {
	e.t.Helper()
	res, err := e.core.ListMultipartUploads(e.ctx(), e.bucket, prefix, "", "", "", 1000)
	if err != nil {
		e.t.Fatalf("list uploads: %v", err)
	}
	var out []string
	for _, u := range res.Uploads {
		out = append(out, u.Key)
	}
	slices.Sort(out)
	return out
}

func (e realEnv) get(key string) []byte {
	e.t.Helper()
	r, _, _, err := e.core.GetObject(e.ctx(), e.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		e.t.Fatalf("get %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// bigValue is a record value of about 1 KiB.
func bigValue(id int) []byte {
	return fmt.Appendf(nil, `{"id":%d,"pad":"%s"}`, id, strings.Repeat("y", 1000+id%29))
}

func writeBig(t *testing.T, w sink.Writer, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		r := rec(i)
		r.Value = bigValue(i)
		if err := w.Write(ctx, r); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

// assertVisibleOnce checks that the job's visible objects hold the big
// records of want, each once, and nothing else.
func (e realEnv) assertVisibleOnce(want []int) {
	e.t.Helper()
	seen := map[string]int{}
	n := 0
	for _, k := range e.keys("out/" + jobDir) {
		data := e.get(k)
		for l := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
			seen[l]++
			n++
		}
	}
	for _, id := range want {
		if v := string(bigValue(id)); seen[v] != 1 {
			e.t.Errorf("record %d visible %d times", id, seen[v])
		}
	}
	if n != len(want) {
		e.t.Errorf("%d lines visible, want %d", n, len(want))
	}
}

func (e realEnv) assertClean() {
	e.t.Helper()
	if u := e.uploads(""); len(u) != 0 {
		e.t.Errorf("multipart uploads left: %v", u)
	}
	if d := e.keys("out/_connector/"); len(d) != 0 {
		e.t.Errorf("deltas left: %v", d)
	}
}

// The crash and resume cycle on the real server: the object open at the
// restored checkpoint resumes with its real parts and its tail read back
// from its deltas; uploads begun after the checkpoint are aborted.
func TestRealS3CrashAfterPreCommitThenResumeIsExactlyOnce(t *testing.T) {
	e := newRealEnv(t)
	s := e.sink(nil)
	w := newTestWriter(t, s, 0)
	writeBig(t, w, 0, 6000) // one 5 MiB part and a tail
	checkpointed(t, s, w, 1)
	writeBig(t, w, 6000, 9000)
	restored := preCommit(t, w, 2)
	o := decodeAll(t, restored)[0].Open
	if o == nil || len(o.Parts) == 0 || len(o.Tail) == 0 {
		t.Fatalf("checkpoint 2 should record an open object with parts and a tail: %+v", o)
	}
	writeBig(t, w, 9000, 20000) // the object rolls at 12 MiB, the next gets a part
	preCommit(t, w, 3)          // never completes
	writeBig(t, w, 20000, 21000)
	_ = w.Close()
	if u := e.uploads("out/"); len(u) != 2 {
		t.Fatalf("uploads before the restart: %v, want 2", u)
	}

	s2 := e.sink(nil)
	if err := s2.Recover(e.ctx(), restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if u := e.uploads(""); !slices.Equal(u, []string{o.Key}) {
		t.Fatalf("uploads after Recover: %v, want only %s", u, o.Key)
	}
	w2 := newTestWriter(t, s2, 0)
	writeBig(t, w2, 9000, 21000)
	w2.EndInput()
	checkpointed(t, s2, w2, 3)
	_ = w2.Close()
	e.assertVisibleOnce(ids(0, 21000))
	e.assertClean()
	keys := e.keys("out/" + jobDir)
	if len(keys) != 2 || keys[0] != o.Key {
		t.Fatalf("objects %v, want the resumed %s and one more", keys, o.Key)
	}
}

// completeRacer is the real client, but another object is put at the
// key right before each complete (after the sink looked at the key), and
// the server's answer to the complete is kept.
type completeRacer struct {
	client
	put     func(key string)
	answers []error
}

func (c *completeRacer) CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, parts []minio.CompletePart, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	if c.put != nil {
		c.put(key)
	}
	info, err := c.client.CompleteMultipartUpload(ctx, bucket, key, uploadID, parts, opts)
	c.answers = append(c.answers, err)
	return info, err
}

// If-None-Match: * on the real server: a commit never replaces an object
// that holds its key, whether the sink sees it first (HEAD) or the server
// refuses the complete (412).
func TestRealS3CommitNeverReplacesAnotherObject(t *testing.T) {
	e := newRealEnv(t)
	other := []byte("{\"other\":1}\n")
	putOther := func(key string) {
		if _, err := e.core.PutObject(e.ctx(), e.bucket, key, strings.NewReader(string(other)), int64(len(other)), "", "", minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	racer := &completeRacer{client: e.core}
	s := e.sink(func(c *Config) { c.client = racer })
	w := newTestWriter(t, s, 0)
	writeBig(t, w, 0, 7000)
	w.EndInput()
	cs := preCommit(t, w, 1)
	key := decodeAll(t, cs)[0].Complete[0].Key

	// Put between the sink's HEAD and its complete: the server says 412.
	racer.put = putOther
	if err := s.Commit(e.ctx(), cs); !errors.Is(err, sink.ErrCommitConflict) {
		t.Fatalf("Commit racing another put: %v, want ErrCommitConflict", err)
	}
	if len(racer.answers) != 1 || errCode(racer.answers[0]) != codePreconditionFailed {
		t.Fatalf("the server answered %v, want 412 PreconditionFailed", racer.answers)
	}
	if got := e.get(key); string(got) != string(other) {
		t.Fatalf("the other object was replaced: %d bytes", len(got))
	}
	// Put before: the sink sees it and does not even try.
	racer.put = nil
	if err := s.Commit(e.ctx(), cs); !errors.Is(err, sink.ErrCommitConflict) || len(racer.answers) != 1 {
		t.Fatalf("Commit onto another object: %v after %d completes, want ErrCommitConflict and no complete", err, len(racer.answers))
	}
	// The key freed, the same commit goes through; again, it is a no-op.
	if err := e.core.RemoveObject(e.ctx(), e.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, cs)
	commit(t, s, cs)
	if len(racer.answers) != 2 || racer.answers[1] != nil {
		t.Fatalf("completes %v, want one more, successful", racer.answers)
	}
	e.assertVisibleOnce(ids(0, 7000))
	e.assertClean()
}

// A stop: two writers, objects spanning checkpoints, EndInput before the
// final checkpoint; after its commit everything is visible and no
// multipart upload or delta of the job remains.
func TestRealS3NoUploadRemainsAfterTheFinalStop(t *testing.T) {
	e := newRealEnv(t)
	s := e.sink(func(c *Config) { c.Parallelism = 2 })
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	for id := 1; id <= 3; id++ {
		writeBig(t, w0, (id-1)*3000, id*3000)
		writeBig(t, w1, 100000+(id-1)*3000, 100000+id*3000)
		for _, w := range []*writer{w0, w1} {
			checkpointed(t, s, w, checkpoint.ID(id))
		}
	}
	w0.EndInput()
	w1.EndInput()
	cs := append(preCommit(t, w0, 4), preCommit(t, w1, 4)...)
	commit(t, s, cs)
	_, _ = w0.Close(), w1.Close()
	_ = s.Close()
	e.assertVisibleOnce(append(ids(0, 9000), ids(100000, 109000)...))
	e.assertClean()
	if st := s.Stats(); st.FilesCommitted < 2 {
		t.Errorf("stats %+v", st)
	}
	all, err := s.CommittedAfter(e.ctx(), 0)
	if err != nil || !slices.Equal(all, e.keys("out/"+jobDir)) {
		t.Errorf("CommittedAfter(0) = %v, %v; want every object %v", all, err, e.keys("out/"+jobDir))
	}
	if later, err := s.CommittedAfter(e.ctx(), 4); err != nil || len(later) != 0 {
		t.Errorf("CommittedAfter(4) = %v, %v; want none", later, err)
	}
}

func TestRealS3NewRefusesAMissingBucketAndBadCredentials(t *testing.T) {
	e := newRealEnv(t)
	_, err := New(e.config(func(c *Config) { c.Bucket = "no-such-bucket-here" }), zerolog.Nop())
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), "no-such-bucket-here") || !strings.Contains(err.Error(), e.srv.Endpoint) {
		t.Fatalf("missing bucket: %v", err)
	}
	_, err = New(e.config(func(c *Config) { c.SecretAccessKey = config.NewSecret("wrong-secret") }), zerolog.Nop())
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), e.bucket) || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("bad credentials: %v", err)
	}
}
