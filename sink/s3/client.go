package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/sink"
)

// client is the part of minio-go's Core the sink uses; *minio.Core is one,
// and the tests' in-memory fake is another. minio-go retries each call on
// the errors it deems transient (network errors, 5xx, SlowDown: up to 10
// attempts, backing off up to 1 s), so an error from here has already
// been retried.
type client interface {
	BucketExists(ctx context.Context, bucket string) (bool, error)
	NewMultipartUpload(ctx context.Context, bucket, key string, opts minio.PutObjectOptions) (string, error)
	PutObjectPart(ctx context.Context, bucket, key, uploadID string, part int, data io.Reader, size int64, opts minio.PutObjectPartOptions) (minio.ObjectPart, error)
	ListObjectParts(ctx context.Context, bucket, key, uploadID string, partNumberMarker, maxParts int) (minio.ListObjectPartsResult, error)
	CompleteMultipartUpload(ctx context.Context, bucket, key, uploadID string, parts []minio.CompletePart, opts minio.PutObjectOptions) (minio.UploadInfo, error)
	AbortMultipartUpload(ctx context.Context, bucket, key, uploadID string) error
	ListMultipartUploads(ctx context.Context, bucket, prefix, keyMarker, uploadIDMarker, delimiter string, maxUploads int) (minio.ListMultipartUploadsResult, error)
	PutObject(ctx context.Context, bucket, key string, data io.Reader, size int64, md5Base64, sha256Hex string, opts minio.PutObjectOptions) (minio.UploadInfo, error)
	GetObject(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (io.ReadCloser, minio.ObjectInfo, http.Header, error)
	StatObject(ctx context.Context, bucket, key string, opts minio.StatObjectOptions) (minio.ObjectInfo, error)
	RemoveObject(ctx context.Context, bucket, key string, opts minio.RemoveObjectOptions) error
	// ListObjectsIter lists in key order, a page at a time, under ctx
	// (minio.Core's ListObjectsV2 takes none: a hung listing held up a
	// commit's bound and a stop).
	ListObjectsIter(ctx context.Context, bucket string, opts minio.ListObjectsOptions) iter.Seq[minio.ObjectInfo]
}

var _ client = (*minio.Core)(nil)

// newClient makes the minio-go client cfg describes.
func newClient(cfg *Config) (client, error) {
	core, err := s3conn.NewCore(&cfg.Config, "sink")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sink.ErrInvalidConfig, err)
	}
	return core, nil
}

// S3 error codes the sink acts on, and the reading of errors.
const (
	codeNoSuchUpload       = s3conn.CodeNoSuchUpload
	codeNoSuchKey          = s3conn.CodeNoSuchKey
	codeNoSuchBucket       = s3conn.CodeNoSuchBucket
	codePreconditionFailed = s3conn.CodePreconditionFailed
	codeInvalidPart        = s3conn.CodeInvalidPart
)

var (
	errCode   = s3conn.Code
	errStatus = s3conn.Status
	notFound  = s3conn.NotFound
)

// transient reports whether err may go away by itself (s3conn.Transient);
// a sink error class other than these (a lost or conflicting commit, a bad
// committable) never is.
func transient(err error) bool {
	for _, final := range []error{sink.ErrCommitLost, sink.ErrCommitConflict, sink.ErrBadCommittable, sink.ErrInvalidConfig, sink.ErrLost} {
		if errors.Is(err, final) {
			return false
		}
	}
	return s3conn.Transient(err)
}

// errUnreachable classes the errors Recover retries (sink.Retry).
var errUnreachable = errors.New("s3 unreachable")

// unreachable marks err as one Recover retries if it is transient.
func unreachable(err error) error {
	if err != nil && transient(err) {
		return fmt.Errorf("%w: %w", errUnreachable, err)
	}
	return err
}
