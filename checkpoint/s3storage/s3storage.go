package s3storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/s3conn"
)

// ErrInvalidConfig classes the errors a retry does not cure: a malformed
// setting, a missing bucket, refused credentials.
var ErrInvalidConfig = errors.New("invalid checkpoint storage")

// ErrUnreachable classes the errors that may go away by themselves (the
// server did not answer, or answered 5xx).
var ErrUnreachable = errors.New("checkpoint storage unreachable")

// Storage is a job's place in a bucket; it implements store.Remote.
type Storage struct {
	core   *minio.Core
	bucket string
	root   string // <prefix><job>/
}

var _ store.Remote = (*Storage)(nil)

// Open connects to bucket with conn and checks that the bucket exists and
// the credentials are accepted. Keys go under prefix (empty or ending in
// '/') and the job's name. An error is classed ErrInvalidConfig or
// ErrUnreachable.
func Open(ctx context.Context, conn s3conn.Config, bucket, prefix, job string) (*Storage, error) {
	core, err := s3conn.NewCore(&conn, "checkpoint.s3")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s := &Storage{core: core, bucket: bucket, root: prefix + job + "/"}
	ok, err := core.BucketExists(ctx, bucket)
	switch {
	case err != nil && s3conn.Denied(err):
		return nil, cfgkey.Wrap("checkpoint.s3.access_key_id", fmt.Errorf("%w: checkpoint.s3.access_key_id: %s refused access to bucket %q (%s): check the credentials and their permissions", ErrInvalidConfig, conn.Endpoint, bucket, s3conn.Code(err)))
	case err != nil && s3conn.Code(err) == s3conn.CodeNoSuchBucket:
		ok = false
	case err != nil && s3conn.TLSMisconfigured(err):
		return nil, cfgkey.Wrap("checkpoint.s3.endpoint", fmt.Errorf("%w: checkpoint.s3.endpoint: %s: the TLS setting does not fit the server (https:// to a plain-HTTP server, or a certificate not trusted): %w", ErrInvalidConfig, conn.Endpoint, err))
	case err != nil:
		return nil, s.classify(fmt.Errorf("checkpoint storage %s: %w", s, err))
	}
	if !ok {
		return nil, cfgkey.Wrap("checkpoint.storage", fmt.Errorf("%w: checkpoint.storage: bucket %q does not exist at %s: create it first", ErrInvalidConfig, bucket, conn.Endpoint))
	}
	return s, nil
}

// String names the place: s3://bucket/<prefix><job>/.
func (s *Storage) String() string { return "s3://" + s.bucket + "/" + s.root }

// Put stores body at key with one PUT.
func (s *Storage) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	_, err := s.core.PutObject(ctx, s.bucket, s.root+key, body, size, "", "", minio.PutObjectOptions{})
	return s.classify(err)
}

// Get opens the object at key; store.ErrNotFound when there is none.
func (s *Storage) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, _, _, err := s.core.GetObject(ctx, s.bucket, s.root+key, minio.GetObjectOptions{})
	if s3conn.NotFound(err) {
		return nil, fmt.Errorf("%s%s: %w", s, key, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.classify(err)
	}
	return classifyingReader{rc, s}, nil
}

// classifyingReader classes the errors of reading a body as the call's:
// a connection cut mid-body is ErrUnreachable (retried), not a failure.
type classifyingReader struct {
	io.ReadCloser
	s *Storage
}

func (r classifyingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = r.s.classify(err)
	}
	return n, err
}

// List returns every key under prefix (relative to the job's place) with
// its size.
func (s *Storage) List(ctx context.Context, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	for o := range s.core.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.root + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, s.classify(o.Err)
		}
		out[strings.TrimPrefix(o.Key, s.root)] = o.Size
	}
	if err := ctx.Err(); err != nil { // a listing cancelled between pages just ends
		return nil, err
	}
	return out, nil
}

// Delete removes key; a missing key is no error.
func (s *Storage) Delete(ctx context.Context, key string) error {
	err := s.core.RemoveObject(ctx, s.bucket, s.root+key, minio.RemoveObjectOptions{})
	if s3conn.NotFound(err) {
		return nil
	}
	return s.classify(err)
}

// classify marks a transient error ErrUnreachable.
func (s *Storage) classify(err error) error {
	if err != nil && s3conn.Transient(err) {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return err
}
