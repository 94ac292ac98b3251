package state

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/connector-dev/connector/internal/keygroup"
)

// rescale builds the Store's key groups from sources that owned other
// ranges (the job's parallelism changed): a split, a merge, or both. The
// working directory holds a copy of the primary source's full snapshot (see
// planRestore), which hard-linked its sstables instead of reading them.
//
//  1. Every key group outside the Store's range (the primary's others) is
//     dropped with range deletions. Their keys stay on disk, in sstables
//     shared with the source by hard links (no extra space), until Pebble
//     compacts the deletions, so the first full snapshots may still link
//     them.
//  2. Every other source's full snapshot is copied (hard links) into a
//     private directory under Config.scratchDir, opened read-only, and its
//     keys in the Store's range are written into the Store in batches.
//  3. Every source's changelogs are applied in order, each entry only if
//     its key group is in both the source's range and the Store's. The
//     sources' ranges are disjoint, so their order does not matter: within
//     a key group, base then changelogs, the last write wins.
//
// The result is no old worker's chain: the Store starts one of its own,
// with a full snapshot at its first Checkpoint (delta nil, as when the
// writes outgrew their limit). The scratch directory is removed.
func (s *Store) rescale(cfg Config, plan restorePlan) error {
	start := time.Now()
	scratch := cfg.scratchDir()
	defer func() { _ = s.fs.RemoveAll(scratch) }()
	own := s.keyGroups
	if plan.primary >= 0 {
		for _, drop := range []keygroup.Range{{Start: 0, End: own.Start}, {Start: own.End, End: keygroup.MaxLimit}} {
			if drop.Empty() {
				continue
			}
			if err := s.db.DeleteRange(kgKey(drop.Start), kgKey(drop.End), pebble.NoSync); err != nil {
				return fmt.Errorf("drop key groups %s of %s: %w", drop, plan.base(), err)
			}
		}
	}
	var copied, logs int
	for i, src := range plan.srcs {
		in := src.KeyGroups.Intersect(own)
		if i != plan.primary && src.Chain.Base != "" {
			n, err := s.copyKeyGroups(s.fs.PathJoin(scratch, strconv.Itoa(i)), src.Chain.Base, in)
			if err != nil {
				return fmt.Errorf("copy key groups %s from %s: %w", in, src.Chain.Base, err)
			}
			copied += n
		}
		for _, path := range src.Chain.Changelogs {
			if _, err := applyChangelog(s.fs, path, s.db, s.maxPar, in); err != nil {
				return err
			}
		}
		logs += len(src.Chain.Changelogs)
	}
	s.chain = chain{}
	s.delta = nil
	s.log.Info().Stringer("key_groups", own).Int("sources", len(plan.srcs)).Str("base", plan.base()).
		Int("keys_copied", copied).Int("changelogs", logs).Dur("duration", time.Since(start)).
		Msg("state rescaled: the next checkpoint takes a full snapshot")
	return nil
}

// rescaleBatch is the size of the batches a rescale writes its copies in.
const rescaleBatch = 4 << 20

// copyKeyGroups writes the keys of the key groups in from the full snapshot
// base into the Store, through a private copy in tmp (opening a Pebble
// checkpoint modifies it, read-only or not). It returns how many keys it
// wrote.
func (s *Store) copyKeyGroups(tmp, base string, in keygroup.Range) (n int, err error) {
	if err := s.fs.MkdirAll(tmp, 0o755); err != nil {
		return 0, fmt.Errorf("create %s: %w", tmp, err)
	}
	defer func() { _ = s.fs.RemoveAll(tmp) }()
	if _, err := copyCheckpoint(s.fs, base, tmp); err != nil {
		return 0, err
	}
	src, err := pebble.Open(tmp, &pebble.Options{FS: s.fs, Logger: newPebbleLogger(s.log), ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("open a copy: %w", err)
	}
	defer func() { _ = src.Close() }()
	if err := checkMarker(src, base, s.maxPar); err != nil {
		return 0, err
	}
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: kgKey(in.Start), UpperBound: kgKey(in.End)})
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return n, err
		}
		if err := b.Set(it.Key(), v, nil); err != nil {
			return n, err
		}
		n++
		if b.Len() >= rescaleBatch {
			if err := b.Commit(pebble.NoSync); err != nil {
				return n, err
			}
			b.Reset()
		}
	}
	if err := it.Error(); err != nil {
		return n, err
	}
	return n, b.Commit(pebble.NoSync)
}
