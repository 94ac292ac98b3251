package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/recfmt"
)

// maxTailDeltas bounds the deltas an open object's tail is recorded in: a
// pre-commit that would add one more uploads the whole tail (less than
// one part) as one delta instead, so a slow writer with frequent
// checkpoints keeps its committables small.
const maxTailDeltas = 16

// upload is one object of a writer, as its uploader sees it. The fields
// up to token are fixed when the object opens and may be read by the
// writer; the others belong to the uploader goroutine.
type upload struct {
	key, base string
	first     checkpoint.ID
	writer    int
	opened    time.Time
	token     string

	id      string     // the multipart upload; "" until created
	parts   []partRec  // uploaded, in number order
	tail    []deltaRec // the deltas holding the bytes after the parts
	durable int64      // parts and deltas hold the bytes up to here
	rolled  bool       // complete once recorded
	size    int64      // the final size, once rolled
}

func (up *upload) addPart(p partRec) {
	i, found := slices.BinarySearchFunc(up.parts, p.N, func(q partRec, n int) int { return q.N - n })
	if found {
		up.parts[i] = p
		return
	}
	up.parts = slices.Insert(up.parts, i, p)
}

// partJob is a part to upload: number n of up, or, with last, the final
// bytes of an object that rolled (maybe none) and its size.
type partJob struct {
	up   *upload
	n    int
	data []byte
	// back is data's whole buffer, returned to the sink's pool once the
	// part is uploaded (nil: a buffer not to reuse).
	back []byte
	last bool
	size int64
}

// barrierJob asks for the committable of barrier id, with the writer's
// open objects as they stand at it.
type barrierJob struct {
	id    checkpoint.ID
	opens []openSnap
	reply chan barrierResult
}

// openSnap is an open object at a barrier: it has size bytes, of which
// tail, from offset off, are not in a part handed over before it; format
// is its format's state at size.
type openSnap struct {
	up     *upload
	tail   []byte
	off    int64
	size   int64
	format *filefmt.State
}

type barrierResult struct {
	c   committable
	err error
}

type task struct {
	part    *partJob
	barrier *barrierJob
}

// uploader is a writer's background goroutine: it uploads the parts the
// writer cuts, in order, and answers barriers with the committable once
// everything before them is durable. Tasks run in the order sent, so a
// barrier sees exactly the parts handed over before it.
type uploader struct {
	s      *Sink
	writer int
	log    zerolog.Logger
	ctx    context.Context // ends at Close: in-flight requests are dropped
	cancel context.CancelFunc
	tasks  chan task
	exited chan struct{}
	// held counts the bytes handed over and not uploaded yet (queued, in
	// flight, failed): the writer's backlog.
	held atomic.Int64

	// Owned by the goroutine.
	rolled []*upload  // rolled, not yet in a barrier's committable
	failed []*partJob // uploads to try again at the next barrier
}

func newUploader(s *Sink, writer int, log zerolog.Logger) *uploader {
	ctx, cancel := context.WithCancel(context.Background())
	u := &uploader{s: s, writer: writer, log: log, ctx: ctx, cancel: cancel, tasks: make(chan task, 1), exited: make(chan struct{})}
	go u.run()
	return u
}

func (u *uploader) run() {
	defer close(u.exited)
	for t := range u.tasks {
		if t.part != nil {
			u.part(t.part)
		} else {
			c, err := u.barrier(t.barrier)
			t.barrier.reply <- barrierResult{c, err}
		}
	}
}

// send hands t over, waiting while one task is queued already (the
// writer's backpressure).
func (u *uploader) send(ctx context.Context, t task) error {
	select {
	case u.tasks <- t:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop drops in-flight requests and waits for the goroutine to end.
func (u *uploader) stop() {
	u.cancel()
	close(u.tasks)
	<-u.exited
}

func (u *uploader) part(j *partJob) {
	if j.last {
		j.up.rolled, j.up.size = true, j.size
		u.rolled = append(u.rolled, j.up)
	}
	if len(j.data) == 0 {
		return
	}
	if err := u.uploadPart(j); err != nil {
		u.failed = append(u.failed, j)
		u.log.Warn().Err(err).Str("key", j.up.key).Int("part", j.n).Msg("part upload failed; tried again at the next pre-commit")
	}
}

func (u *uploader) uploadPart(j *partJob) error {
	up := j.up
	if err := u.create(up); err != nil {
		return err
	}
	size := int64(len(j.data))
	p, err := u.s.c.PutObjectPart(u.ctx, u.s.bucket, up.key, up.id, j.n, bytes.NewReader(j.data), size, minio.PutObjectPartOptions{})
	if err != nil {
		return fmt.Errorf("upload part %d of %s: %w", j.n, up.key, err)
	}
	if p.ETag == "" {
		// The complete names each part by its ETag: a part without one
		// (a proxy that strips the header) could never be completed, and
		// its checkpoint, once completed, never committed. Failed here,
		// it declines the checkpoint and is tried again.
		return fmt.Errorf("upload part %d of %s: the answer has no ETag header (a proxy between the connector and S3 removes it?)", j.n, up.key)
	}
	up.addPart(partRec{N: j.n, ETag: p.ETag, Size: size})
	u.held.Add(-size)
	j.data = nil
	u.s.putBuf(j.back)
	j.back = nil
	crashpoint.Hit(crashpoint.AfterPartUpload) // tests: die with a part no checkpoint records
	return nil
}

// create starts up's multipart upload, with the metadata that names its
// job, writer, first checkpoint and token.
func (u *uploader) create(up *upload) error {
	if up.id != "" {
		return nil
	}
	ct := "application/octet-stream"
	switch u.s.cfg.Format {
	case recfmt.JSONL:
		ct = "application/x-ndjson"
	case filefmt.Parquet:
		ct = "application/vnd.apache.parquet"
	}
	id, err := u.s.c.NewMultipartUpload(u.ctx, u.s.bucket, up.key, minio.PutObjectOptions{
		ContentType: ct,
		UserMetadata: map[string]string{
			metaJob:    u.s.cfg.Job,
			metaWriter: strconv.Itoa(up.writer),
			metaFirst:  strconv.FormatUint(uint64(up.first), 10),
			metaToken:  up.token,
		},
	})
	if err != nil {
		return fmt.Errorf("create upload of %s: %w", up.key, err)
	}
	up.id = id
	return nil
}

// barrier makes everything handed over before b durable and returns the
// committable of b.id: the objects rolled since the last successful
// barrier, and the open objects' states. On error nothing is lost: failed
// parts and rolled objects stay for the next barrier.
func (u *uploader) barrier(b *barrierJob) (committable, error) {
	var errs []error
	failed := u.failed
	u.failed = nil
	for _, j := range failed {
		if err := u.uploadPart(j); err != nil {
			u.failed = append(u.failed, j)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return committable{}, u.notDurable(b.id, errors.Join(errs...))
	}
	var c committable
	for _, o := range b.opens {
		rec, err := u.recordOpen(b.id, o)
		if err != nil {
			return committable{}, u.notDurable(b.id, err)
		}
		c.Opens = append(c.Opens, rec)
	}
	for _, up := range u.rolled {
		if up.id == "" || partsSize(up.parts) != up.size {
			// Cannot happen: a rolled object has bytes, all uploaded now.
			return committable{}, fmt.Errorf("s3 sink writer %d: %w: object %s rolled with %d bytes in parts of %d", u.writer, sink.ErrLost, up.key, partsSize(up.parts), up.size)
		}
		c.Complete = append(c.Complete, completeRec{Key: up.key, Upload: up.id, Token: up.token, Size: up.size, Parts: slices.Clone(up.parts)})
	}
	u.rolled = nil
	return c, nil
}

// recordOpen uploads the bytes of the open object b that no part or delta
// holds yet as a delta of barrier id and returns its state.
func (u *uploader) recordOpen(id checkpoint.ID, b openSnap) (*openRec, error) {
	up := b.up
	if err := u.create(up); err != nil {
		return nil, err
	}
	end := partsSize(up.parts)
	if end != b.off {
		return nil, fmt.Errorf("%w: object %s: parts hold %d bytes, the writer handed over %d", sink.ErrLost, up.key, end, b.off)
	}
	up.tail = slices.DeleteFunc(up.tail, func(d deltaRec) bool { return d.Off+d.Len <= end })
	if from := max(up.durable, end); from < b.size {
		if len(up.tail) >= maxTailDeltas {
			from = end
		}
		d := deltaRec{Key: u.s.names.deltaKey(up.base, id), Off: from, Len: b.size - from}
		data := b.tail[from-b.off:]
		if _, err := u.s.c.PutObject(u.ctx, u.s.bucket, d.Key, bytes.NewReader(data), d.Len, "", "", minio.PutObjectOptions{}); err != nil {
			return nil, fmt.Errorf("upload delta %s: %w", d.Key, err)
		}
		if from == end {
			up.tail = up.tail[:0]
		}
		up.tail = append(up.tail, d)
		up.durable = b.size
	}
	return &openRec{
		Key: up.key, Upload: up.id, Token: up.token, Opened: up.opened, Size: b.size,
		Parts: slices.Clone(up.parts), Tail: slices.Clone(up.tail), Format: b.format,
	}, nil
}

// notDurable classes a failed barrier: an upload that is gone lost its
// parts (sink.ErrLost: the task fails, the job restarts from its last
// checkpoint); anything else declines the checkpoint (sink.ErrNotDurable).
func (u *uploader) notDurable(id checkpoint.ID, err error) error {
	class := sink.ErrNotDurable
	if errCode(err) == codeNoSuchUpload {
		class = sink.ErrLost
	}
	return fmt.Errorf("s3 sink writer %d pre-commit %d: %w: %w", u.writer, id, class, err)
}
