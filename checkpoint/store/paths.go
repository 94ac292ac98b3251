package store

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/connector-dev/connector/checkpoint"
)

// File names in the metadata directory.
const (
	metaSuffix = ".meta"
	tmpSuffix  = ".tmp"
	lockName   = "LOCK"
	// modeLockName is LockMode's file: single or group mode (mode_unix.go).
	modeLockName = "MODE"
)

// metaName is the file name of checkpoint id's metadata. The id is
// zero-padded to 20 digits (the width of the largest uint64) so that names
// sort like ids.
func metaName(id checkpoint.ID) string { return id.Name() + metaSuffix }

func tmpName(id checkpoint.ID) string { return metaName(id) + tmpSuffix }

// MaxID is the highest checkpoint id the store accepts: a checkpoint a
// millisecond for longer than recorded history stays far below it, and ids
// can never wrap. A name with a higher id is foreign (not written by a
// store) and ignored.
const MaxID checkpoint.ID = 1 << 53

// parseName recognises metadata and temp file names.
func parseName(name string) (id checkpoint.ID, tmp bool, ok bool) {
	rest, tmp := strings.CutSuffix(name, tmpSuffix)
	rest, ok = strings.CutSuffix(rest, metaSuffix)
	if !ok {
		return 0, false, false
	}
	id, ok = checkpoint.ParseName(rest)
	return id, tmp, ok && id > 0 && id <= MaxID
}

// validStatePath accepts a clean, relative, slash-separated path that stays
// inside the state root. The store deletes these paths, so anything else is
// refused rather than trusted.
func validStatePath(p string) error {
	switch {
	case p == "" || p == ".":
		return errors.New("empty state file path")
	case path.IsAbs(p):
		return fmt.Errorf("state file path %q is not relative", p)
	case path.Clean(p) != p:
		return fmt.Errorf("state file path %q is not clean", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("state file path %q leaves the state root", p)
	}
	return nil
}

// files returns the set of state files md references.
func files(md *checkpoint.Metadata) map[string]struct{} {
	set := make(map[string]struct{})
	for _, snap := range md.Tasks {
		for _, f := range snap.Files {
			set[f] = struct{}{}
		}
	}
	return set
}
