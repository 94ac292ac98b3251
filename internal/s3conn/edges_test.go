package s3conn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/config/secret"
	"github.com/connector-dev/connector/internal/s3test"
)

// edgeOneTry makes minio-go give up after one attempt (as if its own
// retries were spent), so that a test sees at once what the caller gets.
func edgeOneTry(t *testing.T) {
	old := minio.MaxRetry
	minio.MaxRetry = 1
	t.Cleanup(func() { minio.MaxRetry = old })
}

func edgeCore(t *testing.T, endpoint string) *minio.Core {
	t.Helper()
	core, err := NewCore(&Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "id", SecretAccessKey: secret.New("secret")}, "sink")
	if err != nil {
		t.Fatal(err)
	}
	return core
}

// s3Answer serves one S3 error document with status for every request.
func s3Answer(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s3test.WriteError(w, status, code) }
}

// A misconfigured endpoint (https:// for a plain-HTTP server, or a server
// whose certificate is not trusted) never goes away by itself; minio-go
// itself does not retry the first. Transient must say no, or every caller
// (Recover, CommittedAfter, checkpoint storage at start) waits forever.
func TestTransientMisconfiguredTLSIsPermanent(t *testing.T) {
	edgeOneTry(t)
	plain := httptest.NewServer(s3Answer(200, "x"))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(s3Answer(200, "x"))
	defer tlsSrv.Close()
	for name, endpoint := range map[string]string{
		"https to an http server":   "https://" + strings.TrimPrefix(plain.URL, "http://"),
		"untrusted TLS certificate": tlsSrv.URL,
	} {
		_, err := edgeCore(t, endpoint).BucketExists(context.Background(), "bucket")
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if Transient(err) {
			t.Errorf("%s: Transient(%v) = true, want false (a config error retried forever)", name, err)
		}
	}
}

// 501 Not Implemented (a server without a feature the request uses, such
// as If-None-Match on CompleteMultipartUpload) and 505 are permanent;
// minio-go does not retry them either.
func TestTransient501IsPermanent(t *testing.T) {
	edgeOneTry(t)
	srv := httptest.NewServer(s3Answer(http.StatusNotImplemented, "NotImplemented"))
	defer srv.Close()
	_, err := edgeCore(t, srv.URL).ListObjectsV2("bucket", "", "", "", "", 10)
	if err == nil {
		t.Fatal("no error")
	}
	if Transient(err) {
		t.Errorf("Transient(%v) (status %d) = true, want false: a 501 never goes away by itself", err, Status(err))
	}
}

// The S3 error codes minio-go itself retries as transient are transient
// whatever their HTTP status: RequestTimeout comes with 400, an
// InternalError of CompleteMultipartUpload with 200 (AWS documents that a
// complete may fail after its 200 header was sent), ExpiredToken 400,
// Throttling 400.
func TestTransientRetryableCodesWhateverTheStatus(t *testing.T) {
	edgeOneTry(t)
	for _, tc := range []struct {
		status int
		code   string
	}{
		{http.StatusBadRequest, "RequestTimeout"},
		{http.StatusBadRequest, "Throttling"},
		{http.StatusOK, "InternalError"},
	} {
		srv := httptest.NewServer(s3Answer(tc.status, tc.code))
		_, err := edgeCore(t, srv.URL).CompleteMultipartUpload(context.Background(), "bucket", "key", "upload",
			[]minio.CompletePart{{PartNumber: 1, ETag: "e"}}, minio.PutObjectOptions{})
		srv.Close()
		if err == nil {
			t.Fatalf("%d %s: no error", tc.status, tc.code)
		}
		if !Transient(err) {
			t.Errorf("%d %s: Transient(%v) (code %q status %d) = false, want true", tc.status, tc.code, err, Code(err), Status(err))
		}
	}
}
