package s3conn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/connector-dev/connector/internal/cfgkey"
)

// NewCore makes the minio-go client c describes. minio-go retries each
// call on the errors it deems transient (network errors, 5xx, SlowDown:
// up to 10 attempts, backing off up to 1 s). section names the config
// section in errors ("sink", "checkpoint.s3"); an error is a config
// error, its key attached (cfgkey), to be classed by the caller.
func NewCore(c *Config, section string) (*minio.Core, error) {
	host, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		var err error
		if host, secure, err = ParseEndpoint(c.Endpoint); err != nil {
			return nil, cfgkey.Wrap(section+".endpoint", fmt.Errorf("%s.endpoint: %w", section, err))
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
		return nil, cfgkey.Wrap(section+".endpoint", fmt.Errorf("%s.endpoint %s: %w", section, c.Endpoint, err))
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
// answer (a network error, a timeout), or answered with a status or an S3
// error code that minio-go retries (500, 502, 503, 504, 408, 429, 499,
// 520; RequestTimeout, Throttling, SlowDown, InternalError, ... whatever
// the status: an InternalError may come in a 200 answer to a complete).
// Not: 501 and the other statuses (a server lacking a feature the request
// uses stays so), an expired token, a TLS setting that does not fit the
// server (https:// to a plain-HTTP server, a certificate not trusted),
// a cancelled context.
func Transient(err error) bool {
	if errors.Is(err, context.Canceled) || TLSMisconfigured(err) {
		return false
	}
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		if transientCodes[r.Code] {
			return true
		}
		switch r.StatusCode {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
			http.StatusRequestTimeout, http.StatusTooManyRequests, 499, 520,
			http.StatusInsufficientStorage: // a full store frees space, as a full disk does
			return true
		}
		return false
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// transientCodes are the S3 error codes minio-go retries, but for an
// expired token (which a static key does not renew).
var transientCodes = map[string]bool{
	"RequestError": true, "RequestTimeout": true, "Throttling": true, "ThrottlingException": true,
	"RequestLimitExceeded": true, "RequestThrottled": true, "InternalError": true,
	"SlowDown": true, "SlowDownWrite": true, "SlowDownRead": true,
}

// TLSMisconfigured reports whether err says the endpoint's TLS setting
// does not fit the server: https:// to a plain-HTTP server, a certificate
// the client does not trust or that does not name the host. A config
// error, never transient.
func TLSMisconfigured(err error) bool {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var header tls.RecordHeaderError
	if errors.As(err, &invalid) {
		// An expired certificate is renewed on the server: waited for.
		return invalid.Reason != x509.Expired
	}
	// net/http's error for an https:// URL answered in plain HTTP has no
	// type of its own: its text (minio-go matches it so too).
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &header) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}
