package s3test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// These tests pin down what the S3 server of the test run (versitygw, see
// scripts/s3) does with the multipart calls the connector relies on: the
// facts the sink's exactly-once publish is built on. They run against the
// real server, never a fake.

const mib = 1 << 20

type mp struct {
	t      *testing.T
	core   *minio.Core
	bucket string
}

func newMP(t *testing.T) mp {
	c := Server(t)
	return mp{t: t, core: Core(t, c), bucket: Bucket(t, c)}
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// create starts a multipart upload of key with opts.
func (m mp) create(key string, opts minio.PutObjectOptions) string {
	m.t.Helper()
	id, err := m.core.NewMultipartUpload(ctx(m.t), m.bucket, key, opts)
	if err != nil {
		m.t.Fatalf("NewMultipartUpload %s: %v", key, err)
	}
	return id
}

// parts uploads one part per size, each filled with fill, and returns them
// ready for CompleteMultipartUpload.
func (m mp) parts(key, id string, fill byte, sizes ...int) []minio.CompletePart {
	m.t.Helper()
	var out []minio.CompletePart
	for i, n := range sizes {
		data := bytes.Repeat([]byte{fill}, n)
		p, err := m.core.PutObjectPart(ctx(m.t), m.bucket, key, id, i+1, bytes.NewReader(data), int64(n), minio.PutObjectPartOptions{})
		if err != nil {
			m.t.Fatalf("PutObjectPart %s #%d: %v", key, i+1, err)
		}
		out = append(out, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
	}
	return out
}

// upload creates an upload of key with one part per size and returns it
// uncompleted.
func (m mp) upload(key string, fill byte, opts minio.PutObjectOptions, sizes ...int) (string, []minio.CompletePart) {
	m.t.Helper()
	id := m.create(key, opts)
	return id, m.parts(key, id, fill, sizes...)
}

func (m mp) complete(key, id string, parts []minio.CompletePart, ifNoneMatchAny bool) (minio.UploadInfo, error) {
	var opts minio.PutObjectOptions
	if ifNoneMatchAny {
		opts.SetMatchETagExcept("*") // sends If-None-Match: *
	}
	return m.core.CompleteMultipartUpload(ctx(m.t), m.bucket, key, id, parts, opts)
}

func (m mp) mustComplete(key, id string, parts []minio.CompletePart, ifNoneMatchAny bool) minio.UploadInfo {
	m.t.Helper()
	info, err := m.complete(key, id, parts, ifNoneMatchAny)
	if err != nil {
		m.t.Fatalf("CompleteMultipartUpload %s (upload %s): %v", key, id, err)
	}
	return info
}

// content reads key and returns its first byte and size.
func (m mp) content(key string) (byte, int) {
	m.t.Helper()
	r, _, _, err := m.core.GetObject(ctx(m.t), m.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		m.t.Fatalf("GetObject %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		m.t.Fatalf("read %s: %v", key, err)
	}
	if len(b) == 0 {
		return 0, 0
	}
	return b[0], len(b)
}

func (m mp) uploadIDs(prefix string) []string {
	m.t.Helper()
	res, err := m.core.ListMultipartUploads(ctx(m.t), m.bucket, prefix, "", "", "", 1000)
	if err != nil {
		m.t.Fatalf("ListMultipartUploads prefix %q: %v", prefix, err)
	}
	var ids []string
	for _, u := range res.Uploads {
		ids = append(ids, u.Key+" "+u.UploadID)
	}
	slices.Sort(ids)
	return ids
}

func wantS3Error(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %d %s", what, status, code)
	}
	resp := minio.ToErrorResponse(err)
	if resp.StatusCode != status || resp.Code != code {
		t.Fatalf("%s: got %d %q (%v), want %d %s", what, resp.StatusCode, resp.Code, err, status, code)
	}
}

// (a) CompleteMultipartUpload with If-None-Match: * (minio-go:
// PutObjectOptions.SetMatchETagExcept("*")) fails with 412 PreconditionFailed
// when the key already exists, leaves the object alone and leaves the losing
// upload in place (listed, abortable, completable without the header).
func TestCompleteIfNoneMatch(t *testing.T) {
	m := newMP(t)
	const key = "seg/0001"

	id1, p1 := m.upload(key, 1, minio.PutObjectOptions{}, 10)
	first := m.mustComplete(key, id1, p1, true) // key absent: the condition holds
	if b, n := m.content(key); b != 1 || n != 10 {
		t.Fatalf("after the first complete: content %d x %d, want 1 x 10", b, n)
	}

	id2, p2 := m.upload(key, 2, minio.PutObjectOptions{}, 10)
	_, err := m.complete(key, id2, p2, true)
	wantS3Error(t, "second complete onto an existing key with If-None-Match: *", err, 412, "PreconditionFailed")
	if b, n := m.content(key); b != 1 || n != 10 {
		t.Fatalf("after the refused complete: content %d x %d, want the first upload's 1 x 10", b, n)
	}
	if got, want := m.uploadIDs(""), []string{key + " " + id2}; !slices.Equal(got, want) {
		t.Fatalf("uploads after the refused complete: %v, want %v (the refused upload stays)", got, want)
	}

	// Without the header the same upload completes (and overwrites): the 412
	// came from If-None-Match.
	second := m.mustComplete(key, id2, p2, false)
	if second.ETag == first.ETag {
		t.Fatalf("second upload has the first one's ETag %s", first.ETag)
	}
	if b, _ := m.content(key); b != 2 {
		t.Fatalf("after completing without If-None-Match: content %d, want 2", b)
	}

	// A refused upload can be aborted.
	id3, p3 := m.upload(key, 3, minio.PutObjectOptions{}, 10)
	_, err = m.complete(key, id3, p3, true)
	wantS3Error(t, "third complete with If-None-Match: *", err, 412, "PreconditionFailed")
	if err := m.core.AbortMultipartUpload(ctx(t), m.bucket, key, id3); err != nil {
		t.Fatalf("abort the refused upload: %v", err)
	}
	if got := m.uploadIDs(""); len(got) != 0 {
		t.Fatalf("uploads after abort: %v, want none", got)
	}
}

// (b) Every part but the last must be at least 5 MiB: 400 EntityTooSmall at
// CompleteMultipartUpload (PutObjectPart accepts small parts). The refused
// upload stays and can be aborted. A single small part, or 5 MiB exactly
// followed by a small last part, completes.
func TestMinPartSize(t *testing.T) {
	m := newMP(t)

	id, parts := m.upload("small", 4, minio.PutObjectOptions{}, 5*mib-1, 1)
	_, err := m.complete("small", id, parts, false)
	wantS3Error(t, "complete with a first part of 5 MiB - 1", err, 400, "EntityTooSmall")
	if got, want := m.uploadIDs("small"), []string{"small " + id}; !slices.Equal(got, want) {
		t.Fatalf("uploads after EntityTooSmall: %v, want %v", got, want)
	}
	if err := m.core.AbortMultipartUpload(ctx(t), m.bucket, "small", id); err != nil {
		t.Fatalf("abort after EntityTooSmall: %v", err)
	}

	id, parts = m.upload("exact", 5, minio.PutObjectOptions{}, 5*mib, 1)
	m.mustComplete("exact", id, parts, false)
	if _, n := m.content("exact"); n != 5*mib+1 {
		t.Fatalf("exact: %d bytes, want %d", n, 5*mib+1)
	}

	id, parts = m.upload("single", 6, minio.PutObjectOptions{}, 1)
	m.mustComplete("single", id, parts, false)
}

// (c) Completing an upload that already completed does NOT give NoSuchUpload
// on versitygw 1.8.0 while an object exists at the key: it answers 200 with
// the ETag computed from the parts sent, even with If-None-Match: *, even
// after another upload overwrote the key, and even for an upload ID that never
// existed. It answers 404 NoSuchUpload only when the key has no object.
// (backend/posix CompleteMultipartUploadWithCopy: when the upload dir is gone
// and the object file exists it reports success, before any precondition or
// upload-ID check.) A retried complete therefore cannot tell "I completed it"
// from "someone else wrote the key".
func TestRecompleteCompletedUpload(t *testing.T) {
	m := newMP(t)
	const key = "seg/0002"

	id1, p1 := m.upload(key, 1, minio.PutObjectOptions{}, 10)
	first := m.mustComplete(key, id1, p1, true)

	again := m.mustComplete(key, id1, p1, false)
	if again.ETag != first.ETag {
		t.Fatalf("re-complete: ETag %s, want the first complete's %s", again.ETag, first.ETag)
	}
	m.mustComplete(key, id1, p1, true) // If-None-Match: * is not checked either

	// Another upload overwrites the key; re-completing the first still "succeeds"
	// and changes nothing.
	id2, p2 := m.upload(key, 2, minio.PutObjectOptions{}, 10)
	m.mustComplete(key, id2, p2, false)
	if info := m.mustComplete(key, id1, p1, false); info.ETag != first.ETag {
		t.Fatalf("re-complete after overwrite: ETag %s, want %s", info.ETag, first.ETag)
	}
	if b, _ := m.content(key); b != 2 {
		t.Fatalf("re-complete after overwrite changed the object: content %d, want 2", b)
	}

	// An upload ID that never existed, on a key that exists: 200 too.
	m.mustComplete(key, "no-such-upload-id", p1, false)

	// No object at the key: NoSuchUpload.
	_, err := m.complete("absent", "no-such-upload-id", p1, false)
	wantS3Error(t, "complete of an unknown upload ID on an absent key", err, 404, "NoSuchUpload")
	id3, p3 := m.upload("deleted", 3, minio.PutObjectOptions{}, 10)
	m.mustComplete("deleted", id3, p3, false)
	if err := m.core.RemoveObject(ctx(t), m.bucket, "deleted", minio.RemoveObjectOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = m.complete("deleted", id3, p3, false)
	wantS3Error(t, "re-complete after the object was deleted", err, 404, "NoSuchUpload")
	// An aborted upload on an absent key: NoSuchUpload.
	id4, p4 := m.upload("aborted", 4, minio.PutObjectOptions{}, 10)
	if err := m.core.AbortMultipartUpload(ctx(t), m.bucket, "aborted", id4); err != nil {
		t.Fatalf("abort: %v", err)
	}
	_, err = m.complete("aborted", id4, p4, false)
	wantS3Error(t, "complete of an aborted upload", err, 404, "NoSuchUpload")
}

// (d) ListMultipartUploads (minio.Core.ListMultipartUploads) filters by key
// prefix and lists only uploads neither completed nor aborted.
func TestListMultipartUploadsByPrefix(t *testing.T) {
	m := newMP(t)
	a1 := m.create("p/a/1", minio.PutObjectOptions{})
	a2 := m.create("p/a/2", minio.PutObjectOptions{})
	a2bis := m.create("p/a/2", minio.PutObjectOptions{}) // two uploads of one key
	b1 := m.create("p/b/1", minio.PutObjectOptions{})
	m.create("q/a/1", minio.PutObjectOptions{})

	want := []string{"p/a/1 " + a1, "p/a/2 " + a2, "p/a/2 " + a2bis}
	slices.Sort(want)
	if got := m.uploadIDs("p/a/"); !slices.Equal(got, want) {
		t.Fatalf("prefix p/a/: %v, want %v", got, want)
	}
	if got := m.uploadIDs("p/b/"); !slices.Equal(got, []string{"p/b/1 " + b1}) {
		t.Fatalf("prefix p/b/: %v, want [p/b/1 %s]", got, b1)
	}
	if got := m.uploadIDs("p/"); len(got) != 4 {
		t.Fatalf("prefix p/: %v, want 4 uploads", got)
	}
	if got := m.uploadIDs("none/"); len(got) != 0 {
		t.Fatalf("prefix none/: %v, want none", got)
	}

	m.mustComplete("p/a/1", a1, m.parts("p/a/1", a1, 1, 10), false)
	if err := m.core.AbortMultipartUpload(ctx(t), m.bucket, "p/a/2", a2); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if got := m.uploadIDs("p/a/"); !slices.Equal(got, []string{"p/a/2 " + a2bis}) {
		t.Fatalf("prefix p/a/ after one complete and one abort: %v, want [p/a/2 %s]", got, a2bis)
	}
}

// (e) User metadata given at CreateMultipartUpload
// (PutObjectOptions.UserMetadata on minio.Core.NewMultipartUpload) is on the
// completed object: HEAD (StatObject) returns it as x-amz-meta-* headers.
func TestUserMetadataFromCreate(t *testing.T) {
	m := newMP(t)
	const key = "seg/0003"
	opts := minio.PutObjectOptions{UserMetadata: map[string]string{
		"Connector-Offset": "42",
		"connector-epoch":  "7",
	}}
	id, parts := m.upload(key, 1, opts, 5*mib, 10)
	m.mustComplete(key, id, parts, true)

	st, err := m.core.StatObject(ctx(t), m.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("StatObject: %v", err)
	}
	if st.UserMetadata["Connector-Offset"] != "42" || st.UserMetadata["Connector-Epoch"] != "7" {
		t.Fatalf("UserMetadata %v, want Connector-Offset=42 and Connector-Epoch=7", st.UserMetadata)
	}
	if got := st.Metadata.Get("X-Amz-Meta-Connector-Offset"); got != "42" {
		t.Fatalf("header X-Amz-Meta-Connector-Offset %q, want 42 (headers %v)", got, st.Metadata)
	}
	if st.Size != 5*mib+10 {
		t.Fatalf("size %d, want %d", st.Size, 5*mib+10)
	}
}

// Bucket removes its bucket with the objects and unfinished uploads in it.
func TestBucketCleanup(t *testing.T) {
	c := Server(t)
	var name string
	t.Run("make", func(t *testing.T) {
		name = Bucket(t, c)
		m := mp{t: t, core: Core(t, c), bucket: name}
		m.upload("left/pending", 1, minio.PutObjectOptions{}, 10)
		id, parts := m.upload("done", 2, minio.PutObjectOptions{}, 10)
		m.mustComplete("done", id, parts, false)
		if _, err := m.core.PutObject(ctx(t), name, "plain/obj", bytes.NewReader([]byte("x")), 1, "", "", minio.PutObjectOptions{}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
	})
	ok, err := Client(t, c).BucketExists(ctx(t), name)
	if err != nil {
		t.Fatalf("BucketExists %s: %v", name, err)
	}
	if ok {
		t.Fatalf("bucket %s still exists after its test ended", name)
	}
}

func TestBucketName(t *testing.T) {
	for _, name := range []string{"TestX", "TestA/sub_test#01", "Test" + string(bytes.Repeat([]byte("Long_"), 30)), "--"} {
		b := bucketName(name)
		if len(b) < 3 || len(b) > 63 {
			t.Errorf("bucketName(%q) = %q: length %d", name, b, len(b))
		}
		for i, r := range b {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(b)-1) {
				t.Errorf("bucketName(%q) = %q: bad character %q at %d", name, b, r, i)
			}
		}
		if bytes.Contains([]byte(b), []byte("--")) {
			t.Errorf("bucketName(%q) = %q: --", name, b)
		}
	}
	if bucketName("T") == bucketName("T") {
		t.Error("bucketName is not unique")
	}
}
