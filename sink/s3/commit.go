package s3

import (
	"context"
	"errors"
	"fmt"

	"github.com/minio/minio-go/v7"

	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/sink"
)

// Commit completes every object the committables name as rolled, each
// with If-None-Match: * on its key, then deletes their deltas. Open
// objects in the committables need nothing. It is idempotent: an object
// whose key holds it already (its token and size) was committed before.
// It commits all it can before returning the errors it met
// (sink.ErrCommitFailed, ErrCommitLost, ErrCommitConflict,
// ErrBadCommittable).
func (s *Sink) Commit(ctx context.Context, cs []sink.Committable) error {
	var errs []error
	var done []string // base names of objects committed now or before
	completed, skipped, n := 0, 0, 0
	for _, c := range cs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("s3 sink commit: %w: %w", sink.ErrCommitFailed, err))
			break
		}
		d, err := s.names.decode(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range d.Complete {
			if n > 0 {
				crashpoint.Hit(crashpoint.BetweenCompletes) // tests: one object visible, the next not
			}
			n++
			did, err := s.complete(ctx, o)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("s3 sink commit checkpoint %d writer %d: %w", c.Checkpoint, c.Writer, err))
				continue
			case did:
				completed++
				s.filesCommitted.Add(1)
				crashpoint.Hit(crashpoint.MidCommit) // tests: visible, its deltas not yet deleted
			default:
				skipped++
			}
			done = append(done, s.names.base(o.Key))
		}
	}
	for _, base := range done {
		if err := s.deleteDeltas(ctx, base); err != nil {
			// Garbage only: the next Recover deletes deltas nothing needs.
			s.log.Warn().Err(err).Str("object", base).Msg("cannot delete the deltas of a committed object")
		}
	}
	err := errors.Join(errs...)
	ev := s.log.Debug()
	if err != nil {
		ev = s.log.Error().Err(err)
	}
	ev.Int("committables", len(cs)).Int("completed", completed).Int("already_committed", skipped).Msg("commit")
	return err
}

// complete makes object o visible; did says it was not before.
//
// The key is looked at first: S3 answers a repeated complete with
// NoSuchUpload, but some servers (versitygw 1.8) answer 200 to a complete
// of any upload id on a key that holds an object, without checking
// If-None-Match, so the answer alone cannot tell "completed before" from
// "another object holds the key". The metadata token and the size do.
func (s *Sink) complete(ctx context.Context, o completeRec) (did bool, err error) {
	st, err := s.c.StatObject(ctx, s.bucket, o.Key, minio.StatObjectOptions{})
	switch {
	case err == nil:
		return false, s.sameObject(st, o.Key, o.Token, o.Size)
	case !notFound(err):
		return false, fmt.Errorf("%w: head %s: %w", sink.ErrCommitFailed, o.Key, err)
	}
	parts := make([]minio.CompletePart, len(o.Parts))
	for i, p := range o.Parts {
		parts[i] = minio.CompletePart{PartNumber: p.N, ETag: p.ETag}
	}
	var opts minio.PutObjectOptions
	opts.SetMatchETagExcept("*") // If-None-Match: *: never replace an object
	_, err = s.c.CompleteMultipartUpload(ctx, s.bucket, o.Key, o.Upload, parts, opts)
	if err == nil {
		return true, nil
	}
	switch code := errCode(err); code {
	case codeNoSuchUpload, codePreconditionFailed:
		// Either a retry of our own complete whose answer was lost, or
		// the key was taken meanwhile, or the upload is gone.
		st, herr := s.c.StatObject(ctx, s.bucket, o.Key, minio.StatObjectOptions{})
		switch {
		case herr == nil:
			if err := s.sameObject(st, o.Key, o.Token, o.Size); err != nil {
				return false, err
			}
			return true, nil
		case notFound(herr) && code == codeNoSuchUpload:
			return false, fmt.Errorf("%w: upload %s of %s is gone and %s does not exist (a bucket lifecycle rule that aborts uploads sooner than checkpoints are retained?)", sink.ErrCommitLost, o.Upload, o.Key, o.Key)
		default:
			return false, fmt.Errorf("%w: complete %s: %w; head: %w", sink.ErrCommitFailed, o.Key, err, herr)
		}
	case codeInvalidPart:
		return false, fmt.Errorf("%w: complete %s: a recorded part of upload %s is missing or was replaced: %w", sink.ErrCommitLost, o.Key, o.Upload, err)
	default:
		return false, fmt.Errorf("%w: complete %s: %w", sink.ErrCommitFailed, o.Key, err)
	}
}

// sameObject says whether st, at key, is the object of the given token
// and size: nil if so, else ErrCommitConflict.
func (s *Sink) sameObject(st minio.ObjectInfo, key, token string, size int64) error {
	if got := meta(st, metaToken); got != token || st.Size != size {
		return fmt.Errorf("%w: %s holds another object (token %q, %d bytes) than the one to commit (token %q, %d bytes): was checkpoint.dir reset while the bucket was kept?",
			sink.ErrCommitConflict, key, got, st.Size, token, size)
	}
	return nil
}

// deleteDeltas deletes every delta of the object named base.
func (s *Sink) deleteDeltas(ctx context.Context, base string) error {
	var keys []string
	if err := s.listObjects(ctx, s.names.deltaDir(base), "", func(o minio.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return fmt.Errorf("list deltas of %s: %w", base, err)
	}
	return s.removeAll(ctx, keys)
}

// removeAll deletes keys (a key already gone is fine).
func (s *Sink) removeAll(ctx context.Context, keys []string) error {
	var errs []error
	for _, k := range keys {
		if err := s.c.RemoveObject(ctx, s.bucket, k, minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
