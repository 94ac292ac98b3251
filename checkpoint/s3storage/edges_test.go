package s3storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/s3test"
)

// halfBody gives the first half of the body, then fails: the proxy aborts
// the response after its headers (Content-Length included), as a
// connection reset in the middle of a GET does.
type halfBody struct {
	r    io.Reader
	body io.ReadCloser
}

func (h *halfBody) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset by the test")
	}
	return n, err
}

func (h *halfBody) Close() error { return h.body.Close() }

// https:// for a plain-HTTP server is a config error; Open classes it
// ErrUnreachable, and attachStorage retries it forever ("checkpoint
// storage: S3 unreachable at start; retrying"), never exiting 2.
func TestOpenHTTPSEndpointOnAnHTTPServerIsInvalidConfig(t *testing.T) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	cc := conn(c)
	cc.Endpoint = "https://" + strings.TrimPrefix(c.Endpoint, "http://")
	_, err := Open(context.Background(), cc, bucket, "", "orders")
	if errors.Is(err, ErrUnreachable) || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Open with https:// on a plain-HTTP server: %v (unreachable: %v), want ErrInvalidConfig", err, errors.Is(err, ErrUnreachable))
	}
}

// A GET of a checkpoint's metadata cut in the middle (a connection reset)
// is not taken as whole (good), but the read error is not classed
// ErrUnreachable: attachStorage does not retry it, the attempt fails and
// counts towards restart.max_failures, as a bad config would not but a
// blip should not.
func TestTruncatedMetadataReadIsUnreachable(t *testing.T) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	ctx := context.Background()
	direct, err := Open(ctx, conn(c), bucket, "", "orders")
	if err != nil {
		t.Fatal(err)
	}
	// A valid checkpoint 1 on the remote, saved by a store.
	mem := vfs.NewMem()
	a, err := store.Open(mem, "/ckpt", "/state", 2, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.AttachRemote(ctx, direct); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(checkpoint.Metadata{ID: 1}); err != nil {
		t.Fatal(err)
	}

	p := s3test.NewFaultProxy(t, c.Endpoint)
	cc := conn(c)
	cc.Endpoint = p.URL
	viaProxy, err := Open(ctx, cc, bucket, "", "orders")
	if err != nil {
		t.Fatal(err)
	}
	p.Modify(func(r *http.Response) error {
		if r.Request.Method == http.MethodGet && strings.HasSuffix(r.Request.URL.Path, ".meta") && r.StatusCode == 200 {
			data, _ := io.ReadAll(r.Body)
			r.Body = &halfBody{r: bytes.NewReader(data[:len(data)/2]), body: io.NopCloser(nil)}
		}
		return nil
	})
	b, err := store.Open(vfs.NewMem(), "/ckpt", "/state", 2, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.AttachRemote(ctx, viaProxy)
	if err == nil {
		md, _, _ := b.LoadLatest()
		t.Fatalf("AttachRemote took a truncated metadata GET as whole: latest %+v", md)
	}
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("AttachRemote over a GET cut in the middle: %v; want it classed ErrUnreachable (retried), not a failure of the attempt", err)
	}
}

// Core.ListObjectsV2 runs under context.Background(): List ignores its
// context, so AttachRemote (bounded by remoteTimeout, and by a stop) waits
// on a hanging listing for as long as minio-go does.
func TestListHonoursTheContext(t *testing.T) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	p := s3test.NewFaultProxy(t, c.Endpoint)
	cc := conn(c)
	cc.Endpoint = p.URL
	s, err := Open(context.Background(), cc, bucket, "", "orders")
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p.Before(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || r.URL.Query().Get("list-type") != "2" {
			return false
		}
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.List(ctx, "")
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("List returned no error after its context was cancelled")
		}
	case <-time.After(10 * time.Second): // a bound on the failure only
		t.Fatal("List still blocked 10 s after its context was cancelled: ListObjectsV2 ignores ctx")
	}
}
