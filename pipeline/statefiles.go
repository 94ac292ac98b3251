package pipeline

import (
	"path/filepath"
)

// stateFiles turns the state root's relative paths (as checkpoints record
// them, and as package checkpoint/store lays them out: store.WorkDir,
// store.ChangelogPath, store.FullSnapshotPath) into paths to open, and
// back. It deletes nothing: the checkpoint store is the one owner of
// deletion under the state root.
type stateFiles struct {
	root string
}

// abs turns a path relative to the root into one to open; "" stays "".
func (s *stateFiles) abs(rel string) string {
	if rel == "" {
		return ""
	}
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

// rel is abs's inverse.
func (s *stateFiles) rel(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	r, err := filepath.Rel(s.root, path)
	return filepath.ToSlash(r), err
}

// rels is rel of each path.
func (s *stateFiles) rels(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		r, err := s.rel(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
