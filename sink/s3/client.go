package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

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
	ListObjectsV2(bucket, prefix, startAfter, continuationToken, delimiter string, maxKeys int) (minio.ListBucketV2Result, error)
}

var _ client = (*minio.Core)(nil)

// newClient makes the minio-go client cfg describes.
func newClient(cfg *Config) (client, error) {
	host, secure := "s3.amazonaws.com", true
	if cfg.Endpoint != "" {
		var err error
		if host, secure, err = parseEndpoint(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("%w: sink.endpoint: %w", sink.ErrInvalidConfig, err)
		}
	}
	id, secret, token, err := cfg.credentials()
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle.Or(cfg.Endpoint != "") {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(host, &minio.Options{
		Creds:        credentials.NewStaticV4(id, secret, token),
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: sink.endpoint %s: %w", sink.ErrInvalidConfig, cfg.Endpoint, err)
	}
	return core, nil
}

// S3 error codes the sink acts on.
const (
	codeNoSuchUpload       = "NoSuchUpload"
	codeNoSuchKey          = "NoSuchKey"
	codeNoSuchBucket       = "NoSuchBucket"
	codePreconditionFailed = "PreconditionFailed"
	codeInvalidPart        = "InvalidPart"
)

// errCode returns the S3 error code of err ("" for a network error).
func errCode(err error) string {
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		return r.Code
	}
	return minio.ToErrorResponse(err).Code
}

// errStatus returns the HTTP status of err (0 for a network error).
func errStatus(err error) int {
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		return r.StatusCode
	}
	return 0
}

// notFound reports whether err says the key does not exist.
func notFound(err error) bool {
	c := errCode(err)
	return c == codeNoSuchKey || (c == "" && errStatus(err) == http.StatusNotFound)
}

// transient reports whether err may go away by itself: the server did not
// answer (a network error, a timeout), or answered 5xx, 429 or 408
// (minio-go has retried those already). A sink error class other than
// these (a lost or conflicting commit, a bad committable) never is.
func transient(err error) bool {
	for _, final := range []error{sink.ErrCommitLost, sink.ErrCommitConflict, sink.ErrBadCommittable, sink.ErrInvalidConfig, sink.ErrLost, context.Canceled} {
		if errors.Is(err, final) {
			return false
		}
	}
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		s := r.StatusCode
		return s >= 500 || s == http.StatusTooManyRequests || s == http.StatusRequestTimeout
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
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
