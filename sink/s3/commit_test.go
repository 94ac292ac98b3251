package s3

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/sink"
)

// rolled returns the committables of one object of records [0, n), rolled
// and pre-committed at checkpoint 1.
func rolled(t *testing.T, s *Sink, n int) []sink.Committable {
	t.Helper()
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, n)
	w.EndInput()
	return preCommit(t, w, 1)
}

// Commit is idempotent: a second commit of the same committables, and a
// commit after the object was completed (by another sink, at a restart),
// change nothing and count nothing.
func TestCommitTwiceAndCommitAfterCompleteAreNoOps(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	cs := rolled(t, s, 100)
	commit(t, s, cs)
	before := f.count("CompleteMultipartUpload")
	commit(t, s, cs)
	s2 := newTestSink(t, f, nil)
	commit(t, s2, cs)
	if err := s2.Recover(ctx, cs); err != nil {
		t.Fatalf("Recover of a committed checkpoint: %v", err)
	}
	assertExactlyOnce(t, f, ids(0, 100))
	assertClean(t, f)
	if got := f.count("CompleteMultipartUpload"); got != before {
		t.Errorf("%d more completes for an object already visible", got-before)
	}
	if a, b := s.Stats().FilesCommitted, s2.Stats().FilesCommitted; a != 1 || b != 0 {
		t.Errorf("FilesCommitted %d and %d, want 1 and 0", a, b)
	}
}

// The answer to a complete is lost (the request succeeded): the next
// commit finds the object, with its token and size, and is done.
func TestCommitAfterALostCompleteAnswerFindsTheObject(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	cs := rolled(t, s, 100)
	f.afterComplete = func(string) error { return s3Error("InternalError", http.StatusInternalServerError) }
	if err := s.Commit(ctx, cs); !errors.Is(err, sink.ErrCommitFailed) {
		t.Fatalf("Commit with the answer lost: %v, want ErrCommitFailed", err)
	}
	f.afterComplete = nil
	commit(t, s, cs)
	assertExactlyOnce(t, f, ids(0, 100))
	assertClean(t, f)
}

// A retried complete whose first attempt went through: S3 answers
// NoSuchUpload (or 412); the object with the recorded token and size is
// ours, committed.
func TestCompleteAnsweredNoSuchUploadForOurOwnObjectIsCommitted(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	cs := rolled(t, s, 100)
	o := decodeAll(t, cs)[0].Complete[0]
	// Between our HEAD and our complete, "another attempt" completes it.
	f.setFail(func(op, key string) error {
		if op == "CompleteMultipartUpload" {
			f.fail = nil
			f.mu.Unlock()
			defer f.mu.Lock()
			parts := make([]minio.CompletePart, len(o.Parts))
			for i, p := range o.Parts {
				parts[i] = minio.CompletePart{PartNumber: p.N, ETag: p.ETag}
			}
			if _, err := f.CompleteMultipartUpload(ctx, testBucket, o.Key, o.Upload, parts, minio.PutObjectOptions{}); err != nil {
				t.Errorf("first attempt: %v", err)
			}
		}
		return nil
	})
	commit(t, s, cs)
	assertExactlyOnce(t, f, ids(0, 100))
}

// If-None-Match: *: an object of the same key that is not ours (checkpoint
// ids reused after the checkpoint dir was reset) is never replaced.
func TestCommitNeverReplacesAnotherObject(t *testing.T) {
	for _, when := range []string{"before-commit", "between-head-and-complete"} {
		t.Run(when, func(t *testing.T) {
			f := newFakeS3(testBucket, testPart)
			s := newTestSink(t, f, nil)
			cs := rolled(t, s, 100)
			key := decodeAll(t, cs)[0].Complete[0].Key
			other := []byte("{\"other\":1}\n")
			put := func() {
				f.objects[key] = fakeObject{data: other, meta: map[string]string{"Connector-Token": "someone-else"}}
			}
			if when == "before-commit" {
				f.mu.Lock()
				put()
				f.mu.Unlock()
			} else {
				f.setFail(func(op, _ string) error {
					if op == "CompleteMultipartUpload" {
						put()
					}
					return nil
				})
			}
			err := s.Commit(ctx, cs)
			if !errors.Is(err, sink.ErrCommitConflict) || !strings.Contains(err.Error(), key) {
				t.Fatalf("Commit: %v, want ErrCommitConflict naming %s", err, key)
			}
			if data, _ := f.object(key); !bytes.Equal(data, other) {
				t.Fatalf("the other object was replaced: %q", data)
			}
		})
	}
}

// An upload that is gone with no object at its key: the pre-committed
// records are lost, never silently.
func TestCommitOfAGoneUploadIsLost(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	cs := rolled(t, s, 100)
	o := decodeAll(t, cs)[0].Complete[0]
	if err := f.AbortMultipartUpload(ctx, testBucket, o.Key, o.Upload); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, cs); !errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Commit: %v, want ErrCommitLost", err)
	}
}

// A part replaced after the checkpoint (a stale process): the recorded
// ETag no longer matches, the complete fails, nothing is visible.
func TestCommitRefusesAReplacedPart(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	cs := rolled(t, s, 100)
	o := decodeAll(t, cs)[0].Complete[0]
	if _, err := f.PutObjectPart(ctx, testBucket, o.Key, o.Upload, 1, strings.NewReader("stale"), 5, minio.PutObjectPartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, cs); !errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Commit: %v, want ErrCommitLost", err)
	}
	if len(f.keys(jobDir)) != 0 {
		t.Fatalf("visible: %v", f.keys(jobDir))
	}
}

// The object carries the job, writer, first checkpoint and token as user
// metadata, set when its upload was created.
func TestObjectMetadataNamesJobWriterAndFirstCheckpoint(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	cs := rolled(t, s, 10)
	commit(t, s, cs)
	o := decodeAll(t, cs)[0].Complete[0]
	st, err := f.StatObject(ctx, testBucket, o.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{metaJob: testJob, metaWriter: "0", metaFirst: "1", metaToken: o.Token} {
		if got := meta(st, k); got != want {
			t.Errorf("metadata %s = %q, want %q", k, got, want)
		}
	}
}

// Commit refuses committables this job's writer did not write.
func TestCommitRefusesForeignCommittables(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	for _, data := range []string{
		`not json`,
		`{"complete":[{"key":"other/part-other-000000000001-w0-0.jsonl","upload":"u","token":"t","size":1,"parts":[{"n":1,"etag":"e","size":1}]}]}`,
		`{"complete":[{"key":"orders/part-orders-000000000001-w1-0.jsonl","upload":"u","token":"t","size":1,"parts":[{"n":1,"etag":"e","size":1}]}]}`,
		`{"complete":[{"key":"orders/part-orders-000000000001-w0-0.jsonl","upload":"u","token":"t","size":2,"parts":[{"n":1,"etag":"e","size":1}]}]}`,
		`{"open":{"key":"orders/part-orders-000000000001-w0-0.jsonl","upload":"u","token":"t","size":5,"tail":[{"key":"_connector/orders/tails/part-orders-000000000001-w0-0.jsonl/000000000001","off":0,"len":4}]}}`,
	} {
		err := s.Commit(ctx, []sink.Committable{{Checkpoint: 1, Writer: 0, Data: []byte(data)}})
		if !errors.Is(err, sink.ErrBadCommittable) {
			t.Errorf("Commit(%s): %v, want ErrBadCommittable", data, err)
		}
	}
}
