package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
)

// Save persists md as a completed checkpoint, following the write protocol
// in the package documentation. When Save returns nil the metadata is
// durable: a crash at any later point restores md or a newer checkpoint.
//
// An error classed ErrNotDurable means md is not complete; the checkpoints
// saved before are intact and a later Save may succeed. (If the failure was
// the final directory fsync, the file may still surface after a crash; it is
// then a valid checkpoint and MaxID accounts for its id.) An error classed
// ErrInvalid means the caller broke the contract: md.ID must be above every
// id on disk (MaxID) and state file paths must be clean and relative.
//
// After the metadata is durable Save applies retention and deletes state
// files no retained checkpoint references (Collect). A failure there is
// logged, not returned: the checkpoint is complete regardless, and the next
// Save or Collect retries the clean-up.
func (s *Store) Save(md checkpoint.Metadata) error {
	if err := s.Persist(md); err != nil {
		return err
	}
	s.Collect()
	return nil
}

// Persist is Save without the clean-up (steps 1-4 of the write protocol):
// the runtime persists a checkpoint with it and calls Collect once the
// checkpoint is committed, so that deleting the files of dropped
// checkpoints (unlinks and directory fsyncs) does not lengthen the
// checkpoint. Its errors are Save's.
//
// With checkpoint storage attached (AttachRemote), Persist uploads the
// checkpoint there first (the state files it lacks, then the metadata) and
// writes the local file after: the checkpoint counts as saved only once
// both hold it, and a failure of either is ErrNotDurable.
func (s *Store) Persist(md checkpoint.Metadata) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.validate(&md); err != nil {
		return err
	}
	buf, err := encode(md)
	if err != nil {
		return err
	}
	s.maxID = md.ID
	if s.remote != nil {
		if err := s.upload(&md, buf); err != nil {
			return fmt.Errorf("save checkpoint %d: %w: %w", md.ID, ErrNotDurable, err)
		}
	}
	if err := s.write(md.ID, buf); err != nil {
		if s.remote != nil {
			s.withdraw(md.ID)
		}
		return fmt.Errorf("save checkpoint %d: %w: %w", md.ID, ErrNotDurable, err)
	}
	s.log.Debug().Uint64("checkpoint", uint64(md.ID)).Int("bytes", len(buf)).Msg("checkpoint metadata durable")
	return nil
}

func (s *Store) validate(md *checkpoint.Metadata) error {
	if md.ID == 0 || md.ID <= s.maxID {
		return fmt.Errorf("save checkpoint %d: %w: id must be above %d, the highest on disk",
			md.ID, ErrInvalid, s.maxID)
	}
	for task, snap := range md.Tasks {
		for _, f := range snap.Files {
			if err := validStatePath(f); err != nil {
				return fmt.Errorf("save checkpoint %d: %w: task %s: %w", md.ID, ErrInvalid, task, err)
			}
		}
	}
	return nil
}

// write performs steps 1-4 of the write protocol. On failure it removes
// what it created, best-effort.
func (s *Store) write(id checkpoint.ID, buf []byte) error {
	tmp := s.fs.PathJoin(s.dir, tmpName(id))
	final := s.fs.PathJoin(s.dir, metaName(id))
	if err := s.writeTemp(tmp, buf); err != nil {
		s.removeBestEffort(tmp)
		return err
	}
	if err := s.fs.Rename(tmp, final); err != nil {
		s.removeBestEffort(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, final, err)
	}
	if err := fsutil.SyncDir(s.fs, s.dir); err != nil {
		// The rename may or may not survive a crash; withdraw it so that a
		// running process never sees a checkpoint it was told failed.
		s.removeBestEffort(final)
		return err
	}
	return nil
}

func (s *Store) writeTemp(tmp string, buf []byte) error {
	f, err := s.fs.Create(tmp, "checkpoint-metadata")
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(buf); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	return nil
}

func (s *Store) removeBestEffort(name string) {
	if err := s.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn().Err(err).Str("file", name).Msg("could not remove file of a failed checkpoint save")
	}
}
