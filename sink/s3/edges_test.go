package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/s3test"
	"github.com/connector-dev/connector/sink"
)

func isComplete(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Query().Has("uploadId")
}

// cancelOnRetry is a log writer that cancels the test's context at the
// first "retrying" warning of sink.Retry: the call under test returns, and
// the test sees that it was going to wait.
type cancelOnRetry struct {
	cancel  context.CancelFunc
	retries atomic.Int32
	t       *testing.T
}

func (c *cancelOnRetry) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("retrying")) {
		c.retries.Add(1)
		c.cancel()
	}
	c.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// rolledOnRealS3 writes an object that rolls, pre-commits it at 1 (never
// committed: a crash) and returns the committables.
func rolledOnRealS3(t *testing.T, e realEnv) []sink.Committable {
	t.Helper()
	s := e.sink(nil)
	w := newTestWriter(t, s, 0)
	writeBig(t, w, 0, 7000) // one 5 MiB part and a last one
	w.EndInput()
	cs := preCommit(t, w, 1)
	if d := decodeAll(t, cs); len(d) != 1 || len(d[0].Complete) != 1 {
		t.Fatalf("want one object to complete: %s", cs[0].Data)
	}
	_ = w.Close()
	return cs
}

// A server that cannot do a conditional complete answers 501 Not
// Implemented, which no retry cures. Recover classes it transient
// (s3conn.Transient: status >= 500) and waits for S3 forever: the job is
// never ready, never fails, and nothing says the server lacks a feature.
func TestRecoverFailsOnA501Complete(t *testing.T) {
	e := newRealEnv(t)
	restored := rolledOnRealS3(t, e)
	p := s3test.NewFaultProxy(t, e.srv.Endpoint)
	var completes atomic.Int32
	p.Before(func(w http.ResponseWriter, r *http.Request) bool {
		if !isComplete(r) {
			return false
		}
		completes.Add(1)
		s3test.WriteError(w, http.StatusNotImplemented, "NotImplemented")
		return true
	})
	cfg := e.config(func(c *Config) { c.Endpoint = p.URL })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logw := &cancelOnRetry{cancel: cancel, t: t}
	s, err := New(cfg, zerolog.New(logw))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Recover(ctx, restored)
	if logw.retries.Load() > 0 {
		t.Fatalf("Recover retried a 501 NotImplemented complete as 'S3 unreachable' (%d completes sent; it would go on forever): %v", completes.Load(), err)
	}
	if err == nil || errors.Is(err, errUnreachable) {
		t.Fatalf("Recover: %v, want a permanent error", err)
	}
}

// A complete that fails with InternalError in a 200 answer (which AWS
// documents, and minio-go retries) or with 400 RequestTimeout, once
// minio-go's own retries are spent, is classed permanent: Recover gives
// up at once instead of waiting, the attempt fails and after
// restart.max_failures (5) such blips in a row the process exits. The
// same S3 incident answered with 503 would make it wait.
func TestRecoverRetriesATransientCompleteError(t *testing.T) {
	old := minio.MaxRetry
	minio.MaxRetry = 1 // minio-go's retries spent: the incident lasts longer than its ~5 s
	t.Cleanup(func() { minio.MaxRetry = old })
	for _, tc := range []struct {
		status int
		code   string
	}{{http.StatusOK, "InternalError"}, {http.StatusBadRequest, "RequestTimeout"}} {
		t.Run(tc.code, func(t *testing.T) {
			e := newRealEnv(t)
			restored := rolledOnRealS3(t, e)
			p := s3test.NewFaultProxy(t, e.srv.Endpoint)
			var failed atomic.Bool
			p.Before(func(w http.ResponseWriter, r *http.Request) bool {
				if !isComplete(r) || failed.Swap(true) {
					return false // the first complete fails, the others go through
				}
				s3test.WriteError(w, tc.status, tc.code)
				return true
			})
			s := e.sink(func(c *Config) { c.Endpoint = p.URL })
			if err := s.Recover(e.ctx(), restored); err != nil {
				t.Fatalf("Recover after one %d %s answer to the complete: %v (transient: %v); want it retried and nil", tc.status, tc.code, err, transient(err))
			}
			e.assertVisibleOnce(ids(0, 7000))
		})
	}
}

// https:// configured for a plain-HTTP server (or an untrusted
// certificate) is a configuration error that no wait cures, yet New takes
// it for "S3 does not answer; Recover waits for it", and Recover retries
// it forever (job never ready, never exits 2).
func TestHTTPSEndpointOnAnHTTPServerIsAConfigError(t *testing.T) {
	e := newRealEnv(t)
	cfg := e.config(func(c *Config) { c.Endpoint = "https://" + strings.TrimPrefix(e.srv.Endpoint, "http://") })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logw := &cancelOnRetry{cancel: cancel, t: t}
	s, err := New(cfg, zerolog.New(logw))
	if err != nil {
		if !errors.Is(err, sink.ErrInvalidConfig) {
			t.Fatalf("New: %v, want ErrInvalidConfig", err)
		}
		return
	}
	err = s.Recover(ctx, nil)
	t.Fatalf("New accepted an https endpoint on a plain-HTTP server; Recover then: retried %d times (forever), returned %v; want sink.ErrInvalidConfig from New", logw.retries.Load(), err)
}

// Core.ListObjectsV2 takes no context (minio-go runs it under
// context.Background()), so a listing that hung ignored the context of
// CommittedAfter, Recover and Commit (deleteDeltas): a commit bounded by
// its timeout, or a stop, waited for the server instead (up to minio-go's
// one-minute header timeout times its 10 attempts). Listings now run under
// the caller's context.
func TestListingHonoursTheContext(t *testing.T) {
	e := newRealEnv(t)
	p := s3test.NewFaultProxy(t, e.srv.Endpoint)
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p.Before(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || r.URL.Query().Get("list-type") != "2" {
			return false
		}
		arrived <- struct{}{}
		select { // hang until the client gives up, or the test ends
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	s := e.sink(func(c *Config) { c.Endpoint = p.URL })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.CommittedAfter(ctx, 0)
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("CommittedAfter returned no error after its context was cancelled")
		}
	case <-time.After(10 * time.Second): // a bound on the failure, not a wait for success
		t.Fatal("CommittedAfter still blocked in a listing 10 s after its context was cancelled: ListObjectsV2 ignores ctx")
	}
}

// An ETag-less answer to UploadPart (a proxy or gateway that drops the
// header; minio-go returns ETag "" without an error) was recorded as is:
// the pre-commit succeeded, the checkpoint completed, and only then did
// Commit refuse the committable (ErrBadCommittable: parts need an ETag),
// for ever, on every restart: the records of a completed checkpoint could
// never be made visible. The pre-commit now declines.
func TestPartWithoutETagDeclinesThePreCommit(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.client = noETag{f} })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 200)
	w.EndInput()
	cs, err := w.PreCommit(ctx, 1)
	if err != nil {
		return // declined: nothing of a completed checkpoint is lost
	}
	err = s.Commit(ctx, cs)
	t.Fatalf("PreCommit accepted parts without ETag; Commit of the completed checkpoint then: %v", err)
}

type noETag struct{ *fakeS3 }

func (c noETag) PutObjectPart(ctx context.Context, bucket, key, uploadID string, part int, data io.Reader, size int64, opts minio.PutObjectPartOptions) (minio.ObjectPart, error) {
	p, err := c.fakeS3.PutObjectPart(ctx, bucket, key, uploadID, part, data, size, opts)
	p.ETag = ""
	return p, err
}
