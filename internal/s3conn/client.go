package s3conn

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
)

// NewCore makes the minio-go client c describes. minio-go retries each
// call on the errors it deems transient (network errors, 5xx, SlowDown:
// up to 10 attempts, backing off up to 1 s). section names the config
// section in errors ("sink", "checkpoint.s3"); an error is a config
// error, to be classed by the caller.
func NewCore(c *Config, section string) (*minio.Core, error) {
	host, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		var err error
		if host, secure, err = ParseEndpoint(c.Endpoint); err != nil {
			return nil, fmt.Errorf("%s.endpoint: %w", section, err)
		}
	}
	id, secret, token, err := c.Credentials(section)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupDNS
	if c.PathStyle.Or(c.Endpoint != "") {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(host, &minio.Options{
		Creds:        credentials.NewStaticV4(id, secret, token),
		Secure:       secure,
		Region:       c.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("%s.endpoint %s: %w", section, c.Endpoint, err)
	}
	return core, nil
}

// S3 error codes the users act on.
const (
	CodeNoSuchUpload       = "NoSuchUpload"
	CodeNoSuchKey          = "NoSuchKey"
	CodeNoSuchBucket       = "NoSuchBucket"
	CodePreconditionFailed = "PreconditionFailed"
	CodeInvalidPart        = "InvalidPart"
)

// Code returns the S3 error code of err ("" for a network error).
func Code(err error) string {
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		return r.Code
	}
	return minio.ToErrorResponse(err).Code
}

// Status returns the HTTP status of err (0 for a network error).
func Status(err error) int {
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		return r.StatusCode
	}
	return 0
}

// NotFound reports whether err says the key does not exist.
func NotFound(err error) bool {
	c := Code(err)
	return c == CodeNoSuchKey || (c == "" && Status(err) == http.StatusNotFound)
}

// Denied reports whether the server refused the credentials (401, 403).
func Denied(err error) bool {
	s := Status(err)
	return s == http.StatusUnauthorized || s == http.StatusForbidden
}

// Transient reports whether err may go away by itself: the server did not
// answer (a network error, a timeout), or answered 5xx, 429 or 408
// (minio-go has retried those already). A cancelled context never is.
func Transient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
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
