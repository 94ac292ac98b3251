package s3storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config/secret"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/internal/s3test"
)

func conn(c s3test.Config) s3conn.Config {
	return s3conn.Config{Endpoint: c.Endpoint, Region: c.Region, AccessKeyID: c.AccessKey, SecretAccessKey: secret.New(c.SecretKey)}
}

// The Remote's calls against a real S3 server: put, get, list under the
// job's place (nothing of another job), delete (twice), not found.
func TestStorageOnARealServer(t *testing.T) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	ctx := context.Background()
	s, err := Open(ctx, conn(c), bucket, "ckpt/", "orders")
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, conn(c), bucket, "ckpt/", "orders-2")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "s3://"+bucket+"/ckpt/orders/" {
		t.Errorf("String() = %q", got)
	}
	for k, v := range map[string]string{"chk-00000000000000000001.meta": "meta", "state/chk-1/worker-0.changelog": "changes"} {
		if err := s.Put(ctx, k, bytes.NewReader([]byte(v)), int64(len(v))); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Put(ctx, "chk-00000000000000000009.meta", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	keys, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys["chk-00000000000000000001.meta"] != 4 || keys["state/chk-1/worker-0.changelog"] != 7 {
		t.Errorf("List = %v", keys)
	}
	rc, err := s.Get(ctx, "state/chk-1/worker-0.changelog")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "changes" {
		t.Errorf("Get = %q", b)
	}
	if _, err := s.Get(ctx, "chk-00000000000000000002.meta"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing key: %v, want store.ErrNotFound", err)
	}
	for range 2 {
		if err := s.Delete(ctx, "state/chk-1/worker-0.changelog"); err != nil {
			t.Errorf("Delete: %v", err)
		}
	}
	if keys, err := s.List(ctx, "state/"); err != nil || len(keys) != 0 {
		t.Errorf("after Delete: %v, %v", keys, err)
	}
}

// Open refuses a missing bucket and refused credentials as config errors,
// and classes a server that does not answer (in time) as unreachable.
func TestOpenTellsConfigFromUnreachable(t *testing.T) {
	c := s3test.Server(t)
	ctx := context.Background()
	if _, err := Open(ctx, conn(c), "no-such-bucket-here", "", "orders"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("missing bucket: %v, want ErrInvalidConfig", err)
	}
	bad := conn(c)
	bad.SecretAccessKey = secret.New("wrong")
	if _, err := Open(ctx, bad, s3test.Bucket(t, c), "", "orders"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("wrong secret: %v, want ErrInvalidConfig", err)
	}
	down := conn(c)
	down.Endpoint = "http://127.0.0.1:1"
	cctx, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	_, err := Open(cctx, down, "a-bucket", "", "orders")
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no answer: %v, want ErrUnreachable", err)
	}
}

// The store over real S3: a checkpoint saved by one store is restored by
// another with empty directories, state file and all.
func TestStoreRestoresFromRealS3(t *testing.T) {
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	ctx := context.Background()
	open := func() (*store.Store, vfs.FS) {
		mem := vfs.NewMem()
		st, err := store.Open(mem, "/ckpt", "/state", 2, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		r, err := Open(ctx, conn(c), bucket, "", "orders")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.AttachRemote(ctx, r); err != nil {
			t.Fatal(err)
		}
		return st, mem
	}
	a, memA := open()
	if err := memA.MkdirAll("/state/chk-1", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := memA.Create("/state/chk-1/worker-0.changelog", vfs.WriteCategoryUnspecified)
	if err == nil {
		_, err = f.Write([]byte("the changelog"))
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	md := checkpoint.Metadata{ID: 1, Tasks: map[checkpoint.TaskID]checkpoint.Snapshot{"worker-0": {Files: []string{"chk-1/worker-0.changelog"}}}}
	if err := a.Save(md); err != nil {
		t.Fatal(err)
	}
	b, memB := open()
	got, _, err := b.LoadLatest()
	if err != nil || got == nil || got.ID != 1 {
		t.Fatalf("LoadLatest on the second store: %v %v", got, err)
	}
	rf, err := memB.Open("/state/chk-1/worker-0.changelog")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rf)
	_ = rf.Close()
	if string(data) != "the changelog" {
		t.Errorf("restored state file holds %q", data)
	}
}
