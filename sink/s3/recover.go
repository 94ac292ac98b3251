package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
)

// resumed is an open object Recover hands to NewWriter: its upload, the
// bytes after its parts (rebuilt from its deltas) and its format, resumed
// from its recorded state.
type resumed struct {
	up   *upload
	ff   filefmt.File
	size int64
	tail []byte
}

// Recover prepares the sink for a (re)start from the checkpoint whose
// committables are restored, retrying while S3 does not answer:
//
//  1. completes the objects the committables name as rolled (as Commit);
//  2. takes each writer's newest open objects (one per bucket): a writer
//     the job still has (index < pipeline.parallelism) resumes them in
//     NewWriter, each tail read back from its deltas and its format (a
//     Parquet file's row groups) from its recorded state; for a writer it
//     no longer has, or when the format or the parquet schema changed
//     since the object was begun, it completes them now, the tail and the
//     format's last bytes (a Parquet footer, from the recorded state)
//     uploaded as the last part;
//  3. aborts every multipart upload of the job that no restored
//     committable references (begun after the checkpoint: the source
//     replays its records), and deletes every delta that no resumed object
//     needs;
//  4. sets where the names of new objects start: after the checkpoint's
//     barrier and after every visible object of the job.
//
// It must run before any writer opens.
func (s *Sink) Recover(ctx context.Context, restored []sink.Committable) error {
	s.mu.Lock()
	open := len(s.writers)
	s.mu.Unlock()
	if open > 0 {
		return fmt.Errorf("s3 sink recover: %d writers are open; Recover would abort their uploads", open)
	}
	retry := sink.Retry{Log: s.log, Name: "s3 sink", System: "S3", Unreachable: errUnreachable}
	return retry.Do(ctx, "at start", func() error { return unreachable(s.recover(ctx, restored)) })
}

func (s *Sink) recover(ctx context.Context, restored []sink.Committable) error {
	type opensAt struct {
		at   checkpoint.ID
		recs []*openRec
	}
	newest := map[int]opensAt{}
	uploads := map[string]bool{} // every upload a restored committable references
	var last checkpoint.ID
	for _, c := range restored {
		d, err := s.names.decode(c)
		if err != nil {
			return fmt.Errorf("s3 sink recover: %w", err)
		}
		last = max(last, c.Checkpoint)
		for _, o := range d.Complete {
			uploads[o.Upload] = true
		}
		for _, o := range d.Opens {
			uploads[o.Upload] = true
		}
		if cur, ok := newest[c.Writer]; len(d.Opens) > 0 && (!ok || c.Checkpoint >= cur.at) {
			newest[c.Writer] = opensAt{c.Checkpoint, d.Opens}
		}
	}
	if err := s.Commit(ctx, restored); err != nil {
		return fmt.Errorf("s3 sink recover: %w", err)
	}
	resume := map[int][]*resumed{}
	keep := map[string]bool{} // deltas of resumed objects
	completed, resumedN := 0, 0
	for _, w := range slices.Sorted(maps.Keys(newest)) {
		at := newest[w].at
		for _, o := range newest[w].recs {
			r, did, err := s.restoreOpen(ctx, w, at, o)
			if err != nil {
				return err
			}
			if r != nil {
				resume[w] = append(resume[w], r)
				resumedN++
				for _, d := range o.Tail {
					keep[d.Key] = true
				}
			}
			if did {
				completed++
			}
		}
	}
	aborted, err := s.abortUnreferenced(ctx, uploads)
	if err != nil {
		return fmt.Errorf("s3 sink recover: %w", err)
	}
	deleted, err := s.deleteUnreferencedDeltas(ctx, keep)
	if err != nil {
		return fmt.Errorf("s3 sink recover: %w", err)
	}
	lastBarrier := last
	after, err := s.CommittedAfter(ctx, last)
	if err != nil {
		return fmt.Errorf("s3 sink recover: %w", err)
	}
	for _, k := range after {
		f, _, _, _ := s.names.parseObject(k)
		lastBarrier = max(lastBarrier, f)
	}
	s.mu.Lock()
	s.resume, s.lastBarrier = resume, lastBarrier
	s.mu.Unlock()
	s.log.Info().Int("restored_committables", len(restored)).Int("resumed", resumedN).Int("completed_scaled_down", completed).
		Int("aborted_uploads", aborted).Int("deleted_deltas", deleted).Uint64("names_after", uint64(lastBarrier)).Msg("recovered")
	return nil
}

// restoreOpen takes writer w's open object o of checkpoint at: it returns
// it resumed, for the writer to go on with, or completes it (did: now,
// not at an earlier start), for a writer the job no longer has or a
// format that cannot go on.
func (s *Sink) restoreOpen(ctx context.Context, w int, at checkpoint.ID, o *openRec) (r *resumed, did bool, err error) {
	why := fmt.Sprintf("the job has %d writers now", s.cfg.Parallelism)
	if w < s.cfg.Parallelism {
		ff, err := filefmt.Resume(s.cfg.Format, s.cfg.Parquet, o.Format, o.Key)
		if err == nil {
			r, err := s.resumeOpen(ctx, w, at, o, ff)
			if err != nil {
				return nil, false, fmt.Errorf("s3 sink recover: writer %d: %w", w, err)
			}
			return r, false, nil
		}
		if !errors.Is(err, filefmt.ErrSchemaChanged) {
			return nil, false, fmt.Errorf("s3 sink recover: writer %d: open object %s: %w", w, o.Key, err)
		}
		why = err.Error()
		s.log.Warn().Str("key", o.Key).Err(err).Msg("the format or parquet schema changed since the open object was begun: it is completed as it is")
	}
	did, err = s.completeOpen(ctx, w, at, o)
	if err != nil {
		return nil, false, fmt.Errorf("s3 sink recover: writer %d (%s): %w", w, why, err)
	}
	return nil, did, nil
}

// resumeOpen checks that o's upload is still there and reads its tail
// back; ff is its format, resumed. It returns nil (nothing to resume) when
// the object is visible already with its recorded bytes.
func (s *Sink) resumeOpen(ctx context.Context, w int, at checkpoint.ID, o *openRec, ff filefmt.File) (*resumed, error) {
	if _, err := s.c.ListObjectParts(ctx, s.bucket, o.Key, o.Upload, 0, 1); err != nil {
		if errCode(err) != codeNoSuchUpload {
			return nil, fmt.Errorf("list parts of %s: %w", o.Key, err)
		}
		return nil, s.openGone(ctx, at, o)
	}
	tail, err := s.readTail(ctx, o)
	if err != nil {
		return nil, err
	}
	first, _, _, _ := s.names.parseObject(o.Key)
	up := &upload{
		key: o.Key, base: s.names.base(o.Key), first: first, writer: w, opened: o.Opened, token: o.Token,
		id: o.Upload, parts: slices.Clone(o.Parts), tail: slices.Clone(o.Tail), durable: o.Size,
	}
	return &resumed{up: up, ff: ff, size: o.Size, tail: tail}, nil
}

// openGone decides about an open object of checkpoint at whose upload is
// gone: visible (see openVisible), or lost.
func (s *Sink) openGone(ctx context.Context, at checkpoint.ID, o *openRec) error {
	footer, err := filefmt.Finish(o.Format)
	if err != nil {
		return fmt.Errorf("%w: open object %s: %w", sink.ErrBadCommittable, o.Key, err)
	}
	st, err := s.c.StatObject(ctx, s.bucket, o.Key, minio.StatObjectOptions{})
	switch {
	case notFound(err):
		return fmt.Errorf("%w: upload %s of %s, open at checkpoint %d, is gone and %s does not exist: its parts are lost (a bucket lifecycle rule that aborts uploads sooner than checkpoints are retained?)",
			sink.ErrCommitLost, o.Upload, o.Key, at, o.Key)
	case err != nil:
		return fmt.Errorf("head %s: %w", o.Key, err)
	}
	return s.openVisible(at, o, st, o.Size+int64(len(footer)))
}

// openVisible decides about an open object of checkpoint at found
// visible: nil if it holds exactly its recorded bytes and then its
// format's last ones, closed bytes in all (completed at an earlier start,
// for a writer the job had no more or a format that changed), or more
// under checkpoint.on_unrestorable: fall_back (a later checkpoint
// completed it: its records after at are written again); else an error.
func (s *Sink) openVisible(at checkpoint.ID, o *openRec, st minio.ObjectInfo, closed int64) error {
	switch {
	case meta(st, metaToken) != o.Token || st.Size < o.Size:
		return s.sameObject(st, o.Key, o.Token, closed)
	case st.Size == closed:
		s.log.Info().Str("key", o.Key).Msg("an object open at the restored checkpoint is visible already, with its recorded bytes")
		return nil
	case s.cfg.FallBack:
		s.log.Error().Str("key", o.Key).Uint64("checkpoint", uint64(at)).Int64("recorded", o.Size).Int64("visible", st.Size).
			Msg("an object open at the restored checkpoint was completed by a later checkpoint; its records after the checkpoint are written again (checkpoint.on_unrestorable: fall_back)")
		return nil
	default:
		return fmt.Errorf("%w: %s, open at checkpoint %d with %d bytes, was completed by a later checkpoint (%d bytes): restoring checkpoint %d would write its records after them again; restore the newest checkpoint, or set checkpoint.on_unrestorable: fall_back",
			sink.ErrCommitConflict, o.Key, at, o.Size, st.Size, at)
	}
}

// completeOpen completes an open object no writer goes on with (its
// writer is gone, its format changed): its tail (read back from its
// deltas) and its format's last bytes (a Parquet footer, from its
// recorded state) become its last part.
func (s *Sink) completeOpen(ctx context.Context, w int, at checkpoint.ID, o *openRec) (did bool, err error) {
	footer, err := filefmt.Finish(o.Format)
	if err != nil {
		return false, fmt.Errorf("%w: close %s: %w", sink.ErrBadCommittable, o.Key, err)
	}
	size := o.Size + int64(len(footer))
	st, err := s.c.StatObject(ctx, s.bucket, o.Key, minio.StatObjectOptions{})
	switch {
	case err == nil:
		// Completed at an earlier start (or later, see openVisible).
		if err := s.openVisible(at, o, st, size); err != nil {
			return false, err
		}
		return false, s.deleteDeltas(ctx, s.names.base(o.Key))
	case !notFound(err):
		return false, fmt.Errorf("head %s: %w", o.Key, err)
	}
	parts := slices.Clone(o.Parts)
	if end := partsSize(parts); end < o.Size || len(footer) > 0 {
		var tail []byte
		if end < o.Size {
			if tail, err = s.readTail(ctx, o); err != nil {
				return false, err
			}
		}
		tail = append(tail, footer...)
		n := len(parts) + 1
		p, err := s.c.PutObjectPart(ctx, s.bucket, o.Key, o.Upload, n, bytes.NewReader(tail), int64(len(tail)), minio.PutObjectPartOptions{})
		if err != nil {
			if errCode(err) == codeNoSuchUpload {
				return false, s.openGone(ctx, at, o)
			}
			return false, fmt.Errorf("upload the tail of %s as part %d: %w", o.Key, n, err)
		}
		parts = append(parts, partRec{N: n, ETag: p.ETag, Size: int64(len(tail))})
	}
	if len(parts) == 0 {
		if err := s.c.AbortMultipartUpload(ctx, s.bucket, o.Key, o.Upload); err != nil && errCode(err) != codeNoSuchUpload {
			return false, fmt.Errorf("abort the empty upload of %s: %w", o.Key, err)
		}
		return false, nil
	}
	did, err = s.complete(ctx, completeRec{Key: o.Key, Upload: o.Upload, Token: o.Token, Size: size, Parts: parts})
	if err != nil {
		return false, err
	}
	if did {
		s.filesCommitted.Add(1)
	}
	s.log.Info().Str("key", o.Key).Int64("size", size).Int("writer", w).Msg("completed an open object no writer goes on with")
	return did, s.deleteDeltas(ctx, s.names.base(o.Key))
}

// readTail reads the bytes of o after its parts back from its deltas.
func (s *Sink) readTail(ctx context.Context, o *openRec) ([]byte, error) {
	end := partsSize(o.Parts)
	tail := make([]byte, 0, o.Size-end)
	for _, d := range o.Tail {
		rc, _, _, err := s.c.GetObject(ctx, s.bucket, d.Key, minio.GetObjectOptions{})
		if err != nil {
			if notFound(err) {
				return nil, fmt.Errorf("%w: delta %s of %s is gone", sink.ErrCommitLost, d.Key, o.Key)
			}
			return nil, fmt.Errorf("read delta %s: %w", d.Key, err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read delta %s: %w", d.Key, err)
		}
		if int64(len(data)) != d.Len {
			return nil, fmt.Errorf("%w: delta %s of %s holds %d bytes, %d recorded", sink.ErrCommitLost, d.Key, o.Key, len(data), d.Len)
		}
		tail = append(tail, data[max(0, end-d.Off):]...)
	}
	if int64(len(tail)) != o.Size-end {
		return nil, fmt.Errorf("%w: the deltas of %s hold %d bytes after its parts, %d recorded", sink.ErrCommitLost, o.Key, len(tail), o.Size-end)
	}
	return tail, nil
}

// abortUnreferenced aborts every upload of an object of this job that
// uploads does not hold.
func (s *Sink) abortUnreferenced(ctx context.Context, uploads map[string]bool) (int, error) {
	type victim struct{ key, id string }
	var victims []victim
	keyMarker, idMarker := "", ""
	for {
		res, err := s.c.ListMultipartUploads(ctx, s.bucket, s.names.dir, keyMarker, idMarker, "", 1000)
		if err != nil {
			return 0, fmt.Errorf("list uploads under %s: %w", s.names.dir, err)
		}
		for _, u := range res.Uploads {
			if _, _, _, ok := s.names.parseObject(u.Key); ok && !uploads[u.UploadID] {
				victims = append(victims, victim{u.Key, u.UploadID})
			}
		}
		if !res.IsTruncated || (res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker) {
			break
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
	for _, v := range victims {
		if err := s.c.AbortMultipartUpload(ctx, s.bucket, v.key, v.id); err != nil && errCode(err) != codeNoSuchUpload {
			return 0, fmt.Errorf("abort upload %s of %s: %w", v.id, v.key, err)
		}
	}
	return len(victims), nil
}

// deleteUnreferencedDeltas deletes every delta of this job not in keep.
func (s *Sink) deleteUnreferencedDeltas(ctx context.Context, keep map[string]bool) (int, error) {
	var keys []string
	if err := s.listObjects(ctx, s.names.tails, "", func(o minio.ObjectInfo) error {
		if _, ok := s.names.deltaObject(o.Key); ok && !keep[o.Key] {
			keys = append(keys, o.Key)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("list deltas under %s: %w", s.names.tails, err)
	}
	return len(keys), s.removeAll(ctx, keys)
}
