package store

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/connector-dev/connector/checkpoint"
)

// Info describes one metadata file on disk, for `connector checkpoints list`
// and the HTTP API.
type Info struct {
	ID checkpoint.ID
	// Timestamp is when the checkpoint was triggered (zero if Err is set).
	Timestamp time.Time
	// MetaBytes is the size of the metadata file.
	MetaBytes int64
	// Files is how many distinct state files the checkpoint references,
	// StateBytes their total size and Missing how many do not exist. Files
	// shared with other checkpoints count in each of them.
	Files      int
	StateBytes int64
	Missing    int
	// Err is why the checkpoint cannot be restored (classed ErrCorrupt), or
	// nil.
	Err error
}

// List describes every metadata file on disk, oldest first, including those
// that do not verify.
func (s *Store) List() ([]Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.ids()
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	slices.Reverse(ids)
	infos := make([]Info, 0, len(ids))
	for _, id := range ids {
		info := Info{ID: id}
		md, size, err := s.load(id)
		info.MetaBytes = size
		switch {
		case errors.Is(err, ErrCorrupt):
			info.Err = err
		case err != nil:
			return nil, fmt.Errorf("list checkpoints: %w", err)
		default:
			info.Timestamp = md.Timestamp
			if err := s.sizeFiles(md, &info); err != nil {
				return nil, fmt.Errorf("list checkpoints: %w", err)
			}
		}
		infos = append(infos, info)
	}
	return infos, nil
}

func (s *Store) sizeFiles(md *checkpoint.Metadata, info *Info) error {
	for f := range files(md) {
		info.Files++
		st, err := s.fs.Stat(s.fs.PathJoin(s.stateRoot, f))
		if errors.Is(err, os.ErrNotExist) {
			info.Missing++
			continue
		}
		if err != nil {
			return fmt.Errorf("checkpoint %d: stat state file %s: %w", md.ID, f, err)
		}
		info.StateBytes += st.Size()
	}
	if info.Missing > 0 {
		info.Err = fmt.Errorf("checkpoint %d: %w: %d of %d state files missing",
			md.ID, ErrCorrupt, info.Missing, info.Files)
	}
	return nil
}
