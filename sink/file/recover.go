package file

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/sink/internal/filefmt"
	"github.com/connector-dev/connector/sink/internal/pathtmpl"
)

// Recover commits restored (as Commit does), cuts every restored open
// file back to its recorded size and keeps it for its writer (or commits it,
// for a writer the job no longer has), then removes every other hidden file
// of this job, in sink.path and in every bucket directory under it (other
// jobs' files are left alone): files written after the restored
// checkpoint, whose records the source will replay. It must run before
// any writer opens.
func (s *File) Recover(ctx context.Context, restored []sink.Committable) error {
	s.mu.Lock()
	open := len(s.writers)
	s.mu.Unlock()
	if open > 0 {
		return fmt.Errorf("file sink recover: %d writers are open; Recover would delete their parts", open)
	}
	if err := s.Commit(ctx, restored); err != nil {
		return fmt.Errorf("file sink recover: %w", err)
	}
	dirs := []string{""} // to fsync: sink.path and where a file was renamed or removed
	resume, after, err := s.restoreOpen(ctx, restored, &dirs)
	if err != nil {
		return fmt.Errorf("file sink recover: %w", err)
	}
	keep := map[string]bool{}
	for _, opens := range resume {
		for _, o := range opens {
			keep[o.Name] = true
		}
	}
	var errs []error
	removed := 0
	err = s.walk(func(rel, name string) {
		if !s.names.ownHidden(name) || keep[rel] {
			return
		}
		if err := s.fs.Remove(s.path(rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", rel, err))
			return
		}
		bucket, _ := pathtmpl.Split(rel)
		dirs = append(dirs, bucket)
		removed++
	})
	if err != nil {
		errs = append(errs, err)
	}
	if err := s.syncDirs(dirs); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("file sink recover: %w: %w", sink.ErrCommitFailed, err)
	}
	s.mu.Lock()
	s.resume, s.restored = resume, after
	s.mu.Unlock()
	s.log.Info().Int("restored_committables", len(restored)).Int("resumed_open_files", len(keep)).
		Int("removed_hidden", removed).Msg("recovered")
	return nil
}

// restoreOpen cuts each writer's open files of restored back to their
// durable sizes. It returns the files to resume, by writer, and the newest
// checkpoint of restored. A file of a writer at or above cfg.Writers (or
// whose format cannot go on) is committed instead, named as if the
// restored checkpoint had rolled it; its bucket is added to dirs.
func (s *File) restoreOpen(ctx context.Context, restored []sink.Committable, dirs *[]string) (map[int][]openState, checkpoint.ID, error) {
	var after checkpoint.ID
	rolledAt := map[int]int{} // files each writer's pre-commit of after rolled, to number on from
	for _, c := range restored {
		after = max(after, c.Checkpoint)
	}
	opens := map[int]map[string]openState{} // by writer, by name
	for _, c := range restored {
		renames, recs, err := s.names.decode(c)
		if err != nil {
			return nil, 0, err
		}
		if c.Checkpoint == after {
			rolledAt[c.Writer] += len(renames)
		}
		for _, o := range recs {
			m := opens[c.Writer]
			if m == nil {
				m = map[string]openState{}
				opens[c.Writer] = m
			}
			if prev, ok := m[o.Name]; ok && prev.Size != o.Size {
				return nil, 0, fmt.Errorf("%w: writer %d's open file %s is recorded with sizes %d and %d", sink.ErrBadCommittable, c.Writer, o.Name, prev.Size, o.Size)
			}
			m[o.Name] = o
		}
	}
	resume := map[int][]openState{}
	for _, w := range slices.Sorted(maps.Keys(opens)) {
		inBucket := map[string]string{}
		for i, name := range slices.Sorted(maps.Keys(opens[w])) {
			o := opens[w][name]
			bucket, _ := pathtmpl.Split(name)
			if other, ok := inBucket[bucket]; ok {
				return nil, 0, fmt.Errorf("%w: writer %d has two open files in one directory, %s and %s", sink.ErrBadCommittable, w, other, name)
			}
			inBucket[bucket] = name
			closed := rename{From: name, To: pathtmpl.Join(bucket, s.names.finalNameOf(name, w, after, rolledAt[w]+i))}
			goOn, err := s.restoreFile(ctx, w, after, o, closed)
			if err != nil {
				return nil, 0, err
			}
			if goOn {
				resume[w] = append(resume[w], o)
			} else {
				*dirs = append(*dirs, bucket)
			}
		}
	}
	return resume, after, nil
}

// restoreFile cuts writer w's open file o of checkpoint after back to its
// recorded size, and reports whether w goes on with it; if not (w is gone,
// or the format changed), it is closed out and committed as closed says.
func (s *File) restoreFile(ctx context.Context, w int, after checkpoint.ID, o openState, closed rename) (goOn bool, err error) {
	path := s.path(o.Name)
	if _, err := s.fs.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := s.fs.Stat(s.path(closed.To)); err == nil {
			return false, nil // closed out and committed by an earlier Recover of this checkpoint
		}
		later, aerr := s.CommittedAfter(ctx, after)
		if aerr == nil && len(later) > 0 {
			// Committed by a later checkpoint than the one restored:
			// the runtime already decided to restore this one anyway.
			s.log.Error().Str("file", o.Name).Uint64("checkpoint", uint64(after)).Strs("committed_after", later).
				Msg("an open file of the restored checkpoint was committed by a later one; its records are written again")
			return false, nil
		}
		return false, fmt.Errorf("%w: writer %d's open file %s of checkpoint %d is gone", sink.ErrCommitLost, w, o.Name, after)
	}
	if err := fsutil.Truncate(s.fs, path, o.Size); err != nil {
		return false, fmt.Errorf("%w: writer %d's open file: %w", sink.ErrCommitLost, w, err)
	}
	if s.cfg.Writers > 0 && w < s.cfg.Writers {
		if _, err := filefmt.Resume(s.cfg.Format, s.cfg.Parquet, o.Format, o.Name); err == nil {
			return true, nil
		} else if !errors.Is(err, filefmt.ErrSchemaChanged) {
			return false, fmt.Errorf("writer %d's open file %s: %w", w, o.Name, err)
		}
		s.log.Warn().Str("file", o.Name).Msg("the format or parquet schema changed since the open file was begun: it is closed and committed as it is")
	}
	if err := s.closeOut(path, o); err != nil {
		return false, fmt.Errorf("writer %d's open file: %w", w, err)
	}
	if _, err := s.commitFile(closed); err != nil {
		return false, fmt.Errorf("writer %d's open file, of a writer the job no longer has: %w", w, err)
	}
	s.filesCommitted.Add(1)
	return false, nil
}

// closeOut completes a restored open file no writer goes on with: its
// format's last bytes (a Parquet footer) are appended at its recorded size
// and the file fsynced.
func (s *File) closeOut(path string, o openState) error {
	tail, err := filefmt.Finish(o.Format)
	if err != nil {
		return fmt.Errorf("close %s: %w", o.Name, err)
	}
	if len(tail) == 0 {
		return nil
	}
	f, err := s.fs.OpenReadWrite(path, "sink-file")
	if err != nil {
		return fmt.Errorf("%w: open %s: %w", sink.ErrCommitFailed, o.Name, err)
	}
	if _, err := f.WriteAt(tail, o.Size); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: write %s: %w", sink.ErrCommitFailed, o.Name, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: sync %s: %w", sink.ErrCommitFailed, o.Name, err)
	}
	return f.Close()
}

var _ sink.Auditor = (*File)(nil)

// CommittedAfter lists the committed files of this job written at barriers
// after id, in sink.path and its bucket directories (paths relative to
// sink.path): output that a checkpoint after id made visible.
func (s *File) CommittedAfter(_ context.Context, id checkpoint.ID) ([]string, error) {
	var out []string
	err := s.walk(func(rel, name string) {
		if n, ok := s.names.committedAt(name); ok && n > id {
			out = append(out, rel)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// maxDepth bounds how deep walk descends (a template has fewer segments).
const maxDepth = pathtmpl.MaxSegments

// walk calls fn with the path (relative to sink.path) and the name of
// every file of this job (hidden or committed) in sink.path and in the
// directories under it that could be buckets: it does not descend into
// hidden directories (names starting with '.' or '_'), nor stat a name
// of a part file.
func (s *File) walk(fn func(rel, name string)) error {
	var walkDir func(bucket string, depth int) error
	walkDir = func(bucket string, depth int) error {
		dir := s.path(bucket)
		list, err := s.fs.List(dir)
		if err != nil {
			if bucket != "" && errors.Is(err, os.ErrNotExist) {
				return nil // removed meanwhile: nothing of ours in it
			}
			return fmt.Errorf("list %s: %w", dir, err)
		}
		slices.Sort(list)
		for _, name := range list {
			rel := pathtmpl.Join(bucket, name)
			switch {
			case s.names.own(name):
				fn(rel, name)
			case depth >= maxDepth || strings.HasPrefix(name, "part-") || !pathtmpl.ValidDir(name):
			default:
				st, err := s.fs.Stat(s.path(rel))
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("stat %s: %w", s.path(rel), err)
				}
				if err == nil && st.IsDir() {
					if err := walkDir(rel, depth+1); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return walkDir("", 0)
}
