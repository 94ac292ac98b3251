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
// planRestore), which hard-linked its sstables instead of reading them;
// layout is its key layout.
//
//  1. Every key of the primary outside the Store's key groups is deleted
//     (reshape: key groups are at the end of keys, so this reads every key;
//     see keys.go for why). The keys stay on disk, in sstables shared with
//     the source by hard links (no extra space), until Pebble compacts the
//     deletions, so the first full snapshots may still link them.
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
func (s *Store) rescale(cfg Config, plan restorePlan, layout int) error {
	start := time.Now()
	scratch := cfg.scratchDir()
	defer func() { _ = s.fs.RemoveAll(scratch) }()
	own := s.keyGroups
	var copied, dropped, logs int
	if plan.primary >= 0 {
		var err error
		if copied, dropped, err = s.reshape(layout); err != nil {
			return fmt.Errorf("drop the key groups of %s outside %s: %w", plan.base(), own, err)
		}
	}
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
		Int("keys_kept", copied).Int("keys_dropped", dropped).Int("changelogs", logs).Dur("duration_ms", time.Since(start)).
		Msg("state rescaled: the next checkpoint takes a full snapshot")
	return nil
}

// reshape makes the database, a copy of a full snapshot of key layout
// layout, hold only the Store's key groups, in the current layout: it
// reads every state key, deletes those of other key groups and, for an
// older layout, writes the others again under their current key and drops
// the old span. It returns how many keys it kept and dropped.
func (s *Store) reshape(layout int) (kept, dropped int, err error) {
	b := newBatcher(s.db)
	defer b.close()
	var pk []byte
	lo, hi := stateSpan(layout)
	err = scanState(s.db, layout, lo, hi, func(it *pebble.Iterator, kg int, key []byte) error {
		switch {
		case !s.keyGroups.Contains(kg):
			dropped++
			if layout == currentLayout {
				return b.delete(it.Key())
			}
		case layout != currentLayout:
			kept++
			v, err := it.ValueAndErr()
			if err != nil {
				return err
			}
			pk = appendKey(pk[:0], uint16(kg), key)
			return b.set(pk, v)
		default:
			kept++
		}
		return nil
	})
	if err != nil {
		return kept, dropped, err
	}
	if layout != currentLayout {
		if err := b.b.DeleteRange(lo, hi, nil); err != nil {
			return kept, dropped, err
		}
	}
	return kept, dropped, b.commit()
}

// scanState calls fn with every state key of db in [lo, hi), whose key
// layout is layout, in order: the iterator positioned on it, its key group
// and the transform's key (valid until fn returns). It stops at fn's first
// error.
func scanState(db *pebble.DB, layout int, lo, hi []byte, fn func(it *pebble.Iterator, kg int, key []byte) error) (err error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for it.First(); it.Valid(); it.Next() {
		kg, key, ok := decodeKey(layout, it.Key())
		if !ok {
			return fmt.Errorf("%w: key %q is no state key of layout %d", ErrIncompatible, it.Key(), layout)
		}
		if err := fn(it, kg, key); err != nil {
			return err
		}
	}
	return it.Error()
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
	layout, err := checkMarker(src, base, s.maxPar)
	if err != nil {
		return 0, err
	}
	b := newBatcher(s.db)
	defer b.close()
	var pk []byte
	lo, hi := stateSpan(layout)
	err = scanState(src, layout, lo, hi, func(it *pebble.Iterator, kg int, key []byte) error {
		if !in.Contains(kg) {
			return nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		pk = appendKey(pk[:0], uint16(kg), key)
		n++
		return b.set(pk, v)
	})
	if err != nil {
		return n, err
	}
	return n, b.commit()
}

// batcher writes into a database in batches of about rescaleBatch bytes.
type batcher struct {
	db *pebble.DB
	b  *pebble.Batch
}

func newBatcher(db *pebble.DB) *batcher { return &batcher{db: db, b: db.NewBatch()} }

func (b *batcher) set(k, v []byte) error {
	if err := b.b.Set(k, v, nil); err != nil {
		return err
	}
	return b.maybeCommit()
}

func (b *batcher) delete(k []byte) error {
	if err := b.b.Delete(k, nil); err != nil {
		return err
	}
	return b.maybeCommit()
}

func (b *batcher) maybeCommit() error {
	if b.b.Len() < rescaleBatch {
		return nil
	}
	if err := b.b.Commit(pebble.NoSync); err != nil {
		return err
	}
	b.b.Reset()
	return nil
}

func (b *batcher) commit() error { return b.b.Commit(pebble.NoSync) }

func (b *batcher) close() { _ = b.b.Close() }
