package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The environment variables naming the server (printed by scripts/s3 start).
const (
	EnvEndpoint  = "S3_ENDPOINT"   // http://127.0.0.1:39900
	EnvAccessKey = "S3_ACCESS_KEY" // access key id
	EnvSecretKey = "S3_SECRET_KEY" // secret access key
	EnvRegion    = "S3_REGION"     // signing region; us-east-1 when unset
	EnvVersion   = "S3_VERSION"    // informational: versitygw-1.8.0
)

// howToStart is appended to every "no server" failure.
const howToStart = `run the tests through scripts/test, which starts one, or by hand: eval "$(scripts/s3 start)"; export S3_ENDPOINT S3_ACCESS_KEY S3_SECRET_KEY S3_REGION`

// Config names an S3-compatible server and the credentials of its account.
type Config struct {
	// Endpoint is the server's URL: http://host:port or https://host:port.
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string
	// Version is what S3_VERSION says the server is (informational only).
	Version string
}

// Server returns the server of S3_ENDPOINT and its credentials. It fails the
// test (never skips) when S3_ENDPOINT is unset, the configuration is
// incomplete, or the server does not answer.
func Server(t testing.TB) Config {
	t.Helper()
	c := Config{
		Endpoint:  strings.TrimSpace(os.Getenv(EnvEndpoint)),
		AccessKey: os.Getenv(EnvAccessKey),
		SecretKey: os.Getenv(EnvSecretKey),
		Region:    strings.TrimSpace(os.Getenv(EnvRegion)),
		Version:   strings.TrimSpace(os.Getenv(EnvVersion)),
	}
	if c.Endpoint == "" {
		t.Fatalf("s3test: this test needs an S3 server and %s is not set: %s", EnvEndpoint, howToStart)
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		t.Fatalf("s3test: %s is set but %s or %s is not: %s", EnvEndpoint, EnvAccessKey, EnvSecretKey, howToStart)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	cl := Client(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cl.ListBuckets(ctx); err != nil {
		t.Fatalf("s3test: the S3 server at %s does not answer: %v (%s)", c.Endpoint, err, howToStart)
	}
	return c
}

// NewClient returns a minio-go client of the server (path-style requests,
// signature v4).
func (c Config) NewClient() (*minio.Client, error) {
	host, secure, err := c.hostPort()
	if err != nil {
		return nil, err
	}
	return minio.New(host, c.options(secure))
}

// NewCore returns a minio-go Core client (the low-level multipart calls).
func (c Config) NewCore() (*minio.Core, error) {
	host, secure, err := c.hostPort()
	if err != nil {
		return nil, err
	}
	return minio.NewCore(host, c.options(secure))
}

func (c Config) options(secure bool) *minio.Options {
	return &minio.Options{
		Creds:        credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure:       secure,
		Region:       c.Region,
		BucketLookup: minio.BucketLookupPath,
	}
}

func (c Config) hostPort() (host string, secure bool, err error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return "", false, fmt.Errorf("s3test: bad endpoint %q: %v", c.Endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", false, fmt.Errorf("s3test: bad endpoint %q: want http://host:port or https://host:port", c.Endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// Client returns a minio-go client of c; it fails the test on error.
func Client(t testing.TB, c Config) *minio.Client {
	t.Helper()
	cl, err := c.NewClient()
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return cl
}

// Core returns a minio-go Core client of c; it fails the test on error.
func Core(t testing.TB, c Config) *minio.Core {
	t.Helper()
	core, err := c.NewCore()
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return core
}

// Bucket creates a fresh, empty bucket with a unique name on the server of c
// and returns its name. When the test ends it aborts every unfinished
// multipart upload in it, deletes every object and removes the bucket.
func Bucket(t testing.TB, c Config) string {
	t.Helper()
	core := Core(t, c)
	name := bucketName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := core.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: c.Region}); err != nil {
		t.Fatalf("s3test: create bucket %s at %s: %v", name, c.Endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := removeBucket(ctx, core, name); err != nil {
			t.Errorf("s3test: remove bucket %s: %v", name, err)
		}
	})
	return name
}

// removeBucket aborts the bucket's multipart uploads, deletes its objects and
// removes it.
func removeBucket(ctx context.Context, core *minio.Core, bucket string) error {
	// Collect first, then abort: aborting while paging would move the markers.
	type upload struct{ key, id string }
	var uploads []upload
	keyMarker, idMarker := "", ""
	for {
		res, err := core.ListMultipartUploads(ctx, bucket, "", keyMarker, idMarker, "", 1000)
		if err != nil {
			return fmt.Errorf("list multipart uploads: %w", err)
		}
		for _, u := range res.Uploads {
			uploads = append(uploads, upload{u.Key, u.UploadID})
		}
		if !res.IsTruncated || (res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker) {
			break
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
	for _, u := range uploads {
		err := core.AbortMultipartUpload(ctx, bucket, u.key, u.id)
		if err != nil && minio.ToErrorResponse(err).Code != "NoSuchUpload" {
			return fmt.Errorf("abort multipart upload %s of %s: %w", u.id, u.key, err)
		}
	}
	for obj := range core.Client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			return fmt.Errorf("list objects: %w", obj.Err)
		}
		if err := core.RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("delete object %s: %w", obj.Key, err)
		}
	}
	if err := core.RemoveBucket(ctx, bucket); err != nil {
		return err
	}
	return nil
}

// bucketName makes a valid, unique bucket name (3 to 63 of [a-z0-9-], starts
// and ends with a letter or digit) from a test name.
func bucketName(testName string) string {
	var b strings.Builder
	b.WriteString("t-")
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	if !strings.HasSuffix(b.String(), "-") {
		b.WriteByte('-')
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand)
	b.WriteString(hex.EncodeToString(rnd[:]))
	return b.String()
}
