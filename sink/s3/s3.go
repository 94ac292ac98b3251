package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

// Sink is the s3 sink: exactly-once objects in one bucket, each a
// multipart upload that spans checkpoints and is completed when a
// checkpoint after it rolled completes.
//
// Commit, Recover and CommittedAfter may be called from any goroutine, but
// not concurrently with each other; each Writer belongs to one goroutine
// (see Writer). Stats is safe from any goroutine.
type Sink struct {
	cfg    Config
	c      client
	bucket string
	log    zerolog.Logger
	names  names
	tmpl   *pathtmpl.Template // nil: no path_template

	mu          sync.Mutex
	writers     map[int]*writer    // the open writers, by instance
	resume      map[int][]*resumed // open objects Recover handed to NewWriter
	lastBarrier checkpoint.ID      // names of new objects start after it (Recover)

	bytesWritten   atomic.Uint64 // by the writers closed; the open ones count their own
	filesCommitted atomic.Uint64

	// bufs holds part buffers (cap partBufCap) for the writers to reuse.
	bufs sync.Pool
}

// partBufCap is the capacity of a pooled part buffer: a part, and the
// records that arrive while it is cut, without regrowing.
func (s *Sink) partBufCap() int { return int(s.cfg.PartSize) + int(s.cfg.PartSize)/4 }

// partBuf returns an empty buffer of partBufCap, from the pool if it has
// one.
func (s *Sink) partBuf() []byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, s.partBufCap())
}

// putBuf gives a buffer back to the pool, if it is a part buffer's size
// (a buffer grown by append, or small, is left to the collector).
func (s *Sink) putBuf(b []byte) {
	if cap(b) < int(s.cfg.PartSize) || cap(b) > 2*s.partBufCap() {
		return
	}
	b = b[:0]
	s.bufs.Put(&b)
}

var (
	_ sink.Sink          = (*Sink)(nil)
	_ sink.StatsReporter = (*Sink)(nil)
	_ sink.Auditor       = (*Sink)(nil)
)

// New fills cfg's defaults, validates it, and checks that the bucket
// exists and the credentials are accepted (a definite no is
// sink.ErrInvalidConfig; a server that does not answer is only logged:
// Recover waits for it).
func New(cfg Config, log zerolog.Logger) (*Sink, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	tmpl, err := pathtmpl.Parse(cfg.PathTemplate)
	if err != nil {
		return nil, cfgkey.Wrap("sink.path_template", fmt.Errorf("%w: sink.path_template: %w", sink.ErrInvalidConfig, err)) // checked by fill
	}
	c := cfg.client
	if c == nil {
		if c, err = newClient(&cfg); err != nil {
			return nil, err
		}
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "AWS S3 (" + cfg.Region + ")"
	}
	s := &Sink{
		cfg:     cfg,
		c:       c,
		bucket:  cfg.Bucket,
		log:     log.With().Str("sink", "s3").Str("bucket", cfg.Bucket).Str("endpoint", endpoint).Logger(),
		names:   newNames(cfg.Prefix, cfg.Job, cfg.Format),
		tmpl:    tmpl,
		writers: make(map[int]*writer),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	switch {
	case err == nil && !ok:
		return nil, cfgkey.Wrap("sink.bucket", fmt.Errorf("%w: sink.bucket: bucket %q does not exist at %s: create it first", sink.ErrInvalidConfig, cfg.Bucket, endpoint))
	case err != nil && (errStatus(err) == 401 || errStatus(err) == 403):
		return nil, cfgkey.Wrap("sink.access_key_id", fmt.Errorf("%w: sink.access_key_id: %s refused access to bucket %q (%s): check the credentials and their permissions", sink.ErrInvalidConfig, endpoint, cfg.Bucket, errCode(err)))
	case err != nil && errCode(err) == codeNoSuchBucket:
		return nil, cfgkey.Wrap("sink.bucket", fmt.Errorf("%w: sink.bucket: bucket %q does not exist at %s: create it first", sink.ErrInvalidConfig, cfg.Bucket, endpoint))
	case err != nil && s3conn.TLSMisconfigured(err):
		return nil, cfgkey.Wrap("sink.endpoint", fmt.Errorf("%w: sink.endpoint: %s: the TLS setting does not fit the server (https:// to a plain-HTTP server, or a certificate not trusted): %w", sink.ErrInvalidConfig, endpoint, err))
	case err != nil && transient(err):
		s.log.Warn().Err(err).Msg("S3 does not answer; Recover waits for it")
	case err != nil:
		return nil, cfgkey.Wrap("sink.bucket", fmt.Errorf("%w: bucket %q at %s: %w", sink.ErrInvalidConfig, cfg.Bucket, endpoint, err))
	}
	return s, nil
}

// NewWriter opens the writer of worker instance, resuming the objects
// Recover handed over for it, if any. At most one writer per instance may
// be open at a time.
func (s *Sink) NewWriter(instance int) (sink.Writer, error) {
	if instance < 0 {
		return nil, fmt.Errorf("s3 sink: writer instance %d is negative", instance)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writers[instance] != nil {
		return nil, fmt.Errorf("s3 sink: writer %d is already open", instance)
	}
	r := s.resume[instance]
	delete(s.resume, instance)
	w := newWriter(s, instance, s.lastBarrier, r)
	s.writers[instance] = w
	return w, nil
}

func (s *Sink) release(w *writer) {
	s.mu.Lock()
	s.bytesWritten.Add(w.written.Load())
	delete(s.writers, w.instance)
	s.mu.Unlock()
}

// Stats returns the bytes the writers wrote into objects (visible or not
// yet) and the objects Commit and Recover completed, since New.
func (s *Sink) Stats() sink.Stats {
	s.mu.Lock()
	written := s.bytesWritten.Load()
	for _, w := range s.writers {
		written += w.written.Load()
	}
	s.mu.Unlock()
	return sink.Stats{BytesWritten: written, FilesCommitted: s.filesCommitted.Load()}
}

// Close releases nothing: open uploads stay for Recover (or a Commit still
// to come), writers are closed on their own.
func (s *Sink) Close() error { return nil }

// CommittedAfter lists this job's visible objects whose first checkpoint
// F (in the name) is after id: objects that hold only records of
// checkpoints after id. An object that spans id (opened before barrier id,
// completed by a later checkpoint) is not listed: neither its name nor its
// metadata says when it completed. Recover finds those (an object id
// recorded as open that is visible) and refuses to restore id, unless
// checkpoint.on_unrestorable is fall_back.
//
// It lists the objects in buckets whose names sort before "part-" in
// full, and the rest from the first name after id on: without
// path_template, two short listings.
//
// The runtime asks it at every start, before Recover: it retries as
// Recover does while S3 does not answer, so an unreachable S3 keeps the
// job waiting (not ready), not failing.
func (s *Sink) CommittedAfter(ctx context.Context, id checkpoint.ID) ([]string, error) {
	var out []string
	add := func(o minio.ObjectInfo) error {
		if f, _, _, ok := s.names.parseObject(o.Key); ok && f > id {
			out = append(out, o.Key)
		}
		return nil
	}
	flat := s.names.dir + "part-"
	retry := sink.Retry{Log: s.log, Name: "s3 sink", System: "S3", Unreachable: errUnreachable}
	err := retry.Do(ctx, "at start", func() error {
		out = out[:0]
		err := s.listObjects(ctx, s.names.dir, "", func(o minio.ObjectInfo) error {
			if o.Key >= flat {
				return errStopListing
			}
			return add(o)
		})
		if err != nil && !errors.Is(err, errStopListing) {
			return unreachable(err)
		}
		return unreachable(s.listObjects(ctx, s.names.dir, s.names.firstAfter(id), add))
	})
	if err != nil {
		return nil, fmt.Errorf("s3 sink: list %s: %w", s.names.dir, err)
	}
	slices.Sort(out)
	return out, nil
}

// errStopListing ends a listObjects early.
var errStopListing = errors.New("stop listing")

// listObjects calls fn for every key under prefix after startAfter, in
// order, until fn returns an error.
func (s *Sink) listObjects(ctx context.Context, prefix, startAfter string, fn func(minio.ObjectInfo) error) error {
	for o := range s.c.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, StartAfter: startAfter, Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return ctx.Err() // a listing cancelled between pages just ends
}

// newToken returns a random token for an object's metadata: it tells the
// object a committable names from any other object of the same key.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// User metadata set at CreateMultipartUpload (x-amz-meta-*).
const (
	metaJob    = "Connector-Job"
	metaWriter = "Connector-Writer"
	metaFirst  = "Connector-First-Checkpoint"
	metaToken  = "Connector-Token"
)

// meta returns the value of user metadata key k of an object (any case).
func meta(o minio.ObjectInfo, k string) string {
	for mk, v := range o.UserMetadata {
		if strings.EqualFold(mk, k) {
			return v
		}
	}
	return o.Metadata.Get("X-Amz-Meta-" + k)
}
