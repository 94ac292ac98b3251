package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
)

// fakeS3 is an in-memory S3 bucket with the calls of client, behaving as
// AWS S3 does where the sink depends on it: parts by number (a part
// uploaded again replaces the old one), CompleteMultipartUpload with the
// parts listed by ETag (others are dropped; every part but the last at
// least minPart bytes), If-None-Match: *, NoSuchUpload for an upload that
// is completed or aborted, user metadata from the create on the object.
// fail, if set, is asked before every call and may inject an error.
type fakeS3 struct {
	bucket  string
	minPart int64

	mu      sync.Mutex
	objects map[string]fakeObject
	uploads map[string]*fakeUpload
	nextID  int
	calls   map[string]int
	fail    func(op, key string) error
	// afterComplete, if set, runs after a successful complete, before it
	// answers; an error it returns is the answer (a reply lost in transit).
	afterComplete func(key string) error
}

type fakeObject struct {
	data []byte
	meta map[string]string
}

type fakeUpload struct {
	key   string
	meta  map[string]string
	parts map[int]fakePart
}

type fakePart struct {
	data []byte
	etag string
}

var _ client = (*fakeS3)(nil)

func newFakeS3(bucket string, minPart int64) *fakeS3 {
	return &fakeS3{bucket: bucket, minPart: minPart, objects: map[string]fakeObject{}, uploads: map[string]*fakeUpload{}, calls: map[string]int{}}
}

func s3Error(code string, status int) error {
	return minio.ErrorResponse{Code: code, Message: code, StatusCode: status}
}

// enter counts the call and asks fail; the caller holds f.mu afterwards.
func (f *fakeS3) enter(op, bucket, key string) error {
	f.mu.Lock()
	f.calls[op]++
	if bucket != f.bucket {
		return s3Error(codeNoSuchBucket, http.StatusNotFound)
	}
	if f.fail != nil {
		if err := f.fail(op, key); err != nil {
			return err
		}
	}
	return nil
}

func etagOf(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

func canonicalMeta(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

func (f *fakeS3) BucketExists(_ context.Context, bucket string) (bool, error) {
	err := f.enter("BucketExists", bucket, "")
	defer f.mu.Unlock()
	if err != nil && minio.ToErrorResponse(err).Code == codeNoSuchBucket {
		return false, nil
	}
	return err == nil, err
}

func (f *fakeS3) NewMultipartUpload(_ context.Context, bucket, key string, opts minio.PutObjectOptions) (string, error) {
	err := f.enter("NewMultipartUpload", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return "", err
	}
	f.nextID++
	id := fmt.Sprintf("upload-%d", f.nextID)
	f.uploads[id] = &fakeUpload{key: key, meta: canonicalMeta(opts.UserMetadata), parts: map[int]fakePart{}}
	return id, nil
}

func (f *fakeS3) PutObjectPart(_ context.Context, bucket, key, uploadID string, part int, data io.Reader, size int64, _ minio.PutObjectPartOptions) (minio.ObjectPart, error) {
	b, rerr := io.ReadAll(data)
	err := f.enter("PutObjectPart", bucket, key)
	defer f.mu.Unlock()
	switch u := f.uploads[uploadID]; {
	case err != nil:
		return minio.ObjectPart{}, err
	case rerr != nil || int64(len(b)) != size:
		return minio.ObjectPart{}, fmt.Errorf("fake: part of %d bytes, size %d: %v", len(b), size, rerr)
	case u == nil || u.key != key:
		return minio.ObjectPart{}, s3Error(codeNoSuchUpload, http.StatusNotFound)
	default:
		p := fakePart{data: b, etag: etagOf(b)}
		u.parts[part] = p
		return minio.ObjectPart{PartNumber: part, ETag: p.etag, Size: size}, nil
	}
}

func (f *fakeS3) ListObjectParts(_ context.Context, bucket, key, uploadID string, marker, maxParts int) (minio.ListObjectPartsResult, error) {
	err := f.enter("ListObjectParts", bucket, key)
	defer f.mu.Unlock()
	u := f.uploads[uploadID]
	if err != nil {
		return minio.ListObjectPartsResult{}, err
	}
	if u == nil || u.key != key {
		return minio.ListObjectPartsResult{}, s3Error(codeNoSuchUpload, http.StatusNotFound)
	}
	res := minio.ListObjectPartsResult{Key: key, UploadID: uploadID}
	for _, n := range slices.Sorted(maps.Keys(u.parts)) {
		if n <= marker {
			continue
		}
		if len(res.ObjectParts) == maxParts {
			res.IsTruncated = true
			break
		}
		res.ObjectParts = append(res.ObjectParts, minio.ObjectPart{PartNumber: n, ETag: u.parts[n].etag, Size: int64(len(u.parts[n].data))})
	}
	return res, nil
}

func (f *fakeS3) CompleteMultipartUpload(_ context.Context, bucket, key, uploadID string, parts []minio.CompletePart, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	err := f.enter("CompleteMultipartUpload", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return minio.UploadInfo{}, err
	}
	u := f.uploads[uploadID]
	if u == nil || u.key != key {
		return minio.UploadInfo{}, s3Error(codeNoSuchUpload, http.StatusNotFound)
	}
	if _, exists := f.objects[key]; exists && opts.Header().Get("If-None-Match") == "*" {
		return minio.UploadInfo{}, s3Error(codePreconditionFailed, http.StatusPreconditionFailed)
	}
	var data []byte
	for i, cp := range parts {
		p, ok := u.parts[cp.PartNumber]
		switch {
		case !ok || p.etag != cp.ETag:
			return minio.UploadInfo{}, s3Error(codeInvalidPart, http.StatusBadRequest)
		case i > 0 && cp.PartNumber <= parts[i-1].PartNumber:
			return minio.UploadInfo{}, s3Error("InvalidPartOrder", http.StatusBadRequest)
		case i < len(parts)-1 && int64(len(p.data)) < f.minPart:
			return minio.UploadInfo{}, s3Error("EntityTooSmall", http.StatusBadRequest)
		}
		data = append(data, p.data...)
	}
	f.objects[key] = fakeObject{data: data, meta: u.meta}
	delete(f.uploads, uploadID)
	if f.afterComplete != nil {
		if err := f.afterComplete(key); err != nil {
			return minio.UploadInfo{}, err
		}
	}
	return minio.UploadInfo{Bucket: bucket, Key: key, Size: int64(len(data))}, nil
}

func (f *fakeS3) AbortMultipartUpload(_ context.Context, bucket, key, uploadID string) error {
	err := f.enter("AbortMultipartUpload", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	if u := f.uploads[uploadID]; u == nil || u.key != key {
		return s3Error(codeNoSuchUpload, http.StatusNotFound)
	}
	delete(f.uploads, uploadID)
	return nil
}

// ListMultipartUploads lists by key, then upload id, two at a time at
// most (so that callers page).
func (f *fakeS3) ListMultipartUploads(_ context.Context, bucket, prefix, keyMarker, idMarker, _ string, maxUploads int) (minio.ListMultipartUploadsResult, error) {
	err := f.enter("ListMultipartUploads", bucket, prefix)
	defer f.mu.Unlock()
	if err != nil {
		return minio.ListMultipartUploadsResult{}, err
	}
	type entry struct{ key, id string }
	var all []entry
	for id, u := range f.uploads {
		if strings.HasPrefix(u.key, prefix) {
			all = append(all, entry{u.key, id})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.key+"\x00"+a.id, b.key+"\x00"+b.id) })
	res := minio.ListMultipartUploadsResult{Bucket: bucket, Prefix: prefix}
	for _, e := range all {
		if keyMarker != "" && e.key+"\x00"+e.id <= keyMarker+"\x00"+idMarker {
			continue
		}
		if len(res.Uploads) == min(maxUploads, 2) {
			res.IsTruncated = true
			break
		}
		res.Uploads = append(res.Uploads, minio.ObjectMultipartInfo{Key: e.key, UploadID: e.id})
		res.NextKeyMarker, res.NextUploadIDMarker = e.key, e.id
	}
	return res, nil
}

func (f *fakeS3) PutObject(_ context.Context, bucket, key string, data io.Reader, size int64, _, _ string, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	b, rerr := io.ReadAll(data)
	err := f.enter("PutObject", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return minio.UploadInfo{}, err
	}
	if rerr != nil || int64(len(b)) != size {
		return minio.UploadInfo{}, fmt.Errorf("fake: object of %d bytes, size %d: %v", len(b), size, rerr)
	}
	f.objects[key] = fakeObject{data: b, meta: canonicalMeta(opts.UserMetadata)}
	return minio.UploadInfo{Bucket: bucket, Key: key, Size: size}, nil
}

func (f *fakeS3) GetObject(_ context.Context, bucket, key string, _ minio.GetObjectOptions) (io.ReadCloser, minio.ObjectInfo, http.Header, error) {
	err := f.enter("GetObject", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return nil, minio.ObjectInfo{}, nil, err
	}
	o, ok := f.objects[key]
	if !ok {
		return nil, minio.ObjectInfo{}, nil, s3Error(codeNoSuchKey, http.StatusNotFound)
	}
	return io.NopCloser(bytes.NewReader(slices.Clone(o.data))), f.info(key, o), nil, nil
}

func (f *fakeS3) info(key string, o fakeObject) minio.ObjectInfo {
	return minio.ObjectInfo{Key: key, Size: int64(len(o.data)), ETag: etagOf(o.data), UserMetadata: maps.Clone(o.meta), LastModified: time.Unix(0, 0)}
}

func (f *fakeS3) StatObject(_ context.Context, bucket, key string, _ minio.StatObjectOptions) (minio.ObjectInfo, error) {
	err := f.enter("StatObject", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return minio.ObjectInfo{}, err
	}
	o, ok := f.objects[key]
	if !ok {
		return minio.ObjectInfo{}, s3Error(codeNoSuchKey, http.StatusNotFound)
	}
	return f.info(key, o), nil
}

func (f *fakeS3) RemoveObject(_ context.Context, bucket, key string, _ minio.RemoveObjectOptions) error {
	err := f.enter("RemoveObject", bucket, key)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	delete(f.objects, key)
	return nil
}

// ListObjectsV2 pages three keys at a time (so that callers page).
func (f *fakeS3) ListObjectsV2(bucket, prefix, startAfter, token, _ string, maxKeys int) (minio.ListBucketV2Result, error) {
	err := f.enter("ListObjectsV2", bucket, prefix)
	defer f.mu.Unlock()
	if err != nil {
		return minio.ListBucketV2Result{}, err
	}
	after := max(startAfter, token)
	res := minio.ListBucketV2Result{Name: bucket, Prefix: prefix}
	for _, k := range slices.Sorted(maps.Keys(f.objects)) {
		if !strings.HasPrefix(k, prefix) || k <= after {
			continue
		}
		if len(res.Contents) == min(maxKeys, 3) {
			res.IsTruncated = true
			break
		}
		res.Contents = append(res.Contents, f.info(k, f.objects[k]))
		res.NextContinuationToken = k
	}
	return res, nil
}

// ListObjectsIter lists through ListObjectsV2's pages, as minio-go does.
func (f *fakeS3) ListObjectsIter(ctx context.Context, bucket string, opts minio.ListObjectsOptions) iter.Seq[minio.ObjectInfo] {
	return func(yield func(minio.ObjectInfo) bool) {
		token := ""
		for ctx.Err() == nil {
			res, err := f.ListObjectsV2(bucket, opts.Prefix, opts.StartAfter, token, "", 1000)
			if err != nil {
				yield(minio.ObjectInfo{Err: err})
				return
			}
			for _, o := range res.Contents {
				if !yield(o) {
					return
				}
			}
			if !res.IsTruncated {
				return
			}
			token = res.NextContinuationToken
		}
	}
}

// keys returns the keys of objects under prefix, sorted.
func (f *fakeS3) keys(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// object returns the bytes of key and whether it exists.
func (f *fakeS3) object(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	return o.data, ok
}

// openUploads returns the keys of the unfinished uploads, sorted.
func (f *fakeS3) openUploads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, u := range f.uploads {
		out = append(out, u.key)
	}
	slices.Sort(out)
	return out
}

func (f *fakeS3) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeS3) setFail(fn func(op, key string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}
