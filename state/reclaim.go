package state

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Space that Expire cut off but left on disk, and its reclaim.
//
// Expire excises: a table that straddles an expired range's bound becomes
// a virtual table of what is outside, and its file (the backing table)
// stays whole on disk as long as a virtual table references it. Pebble
// (v2.1) rewrites a virtual table only when a compaction happens to pick
// it, and the Store's thresholds make those rare (store.go: L0 takes 16
// flushes). So a job whose input went idle kept, on disk, the files of
// every bucket its dedup had expired since the last compaction:
// bench/state-growth's workers each held 2.0 MB of backing tables for
// 0.45 MB of live virtual ones (bench/RESULTS.md, "2026-12-07, 09:45").
//
// At each barrier (Checkpoint) the Store looks at its virtual tables. When
// the bytes their files hold beyond them (dead) are at least reclaimMin and
// at least what they hold (so that a reclaim rewrites no more than it
// frees, but for the other tables in the span), it compacts the span of
// those virtual tables on a goroutine of its own: one at a time, never
// waited for by a barrier, cancelled (what has not begun) by Close.
// Compaction keeps every live key, so snapshots and changelogs are not
// concerned; a full snapshot taken meanwhile links whichever tables are
// current.

// reclaimMin is the least dead space worth a compaction.
const reclaimMin = 256 << 10

// reclaim is a compaction Store.reclaimSpace started, until it ends.
type reclaim struct {
	cancel context.CancelFunc
	done   chan struct{}
	dead   int64    // the dead bytes it was started for
	nums   []uint64 // the backing tables it was started for
	err    error    // set before done is closed
	took   time.Duration
}

// deadSpan returns the span of the virtual tables whose backing tables
// hold more dead bytes than live ones, but those in skip, the dead bytes
// and the backing tables' numbers.
func (s *Store) deadSpan(skip []uint64) (lo, hi []byte, dead int64, nums []uint64, err error) {
	levels, err := s.db.SSTables()
	if err != nil {
		return nil, nil, 0, nil, err
	}
	type backing struct {
		live   int64 // its virtual tables' sizes (Pebble's estimates)
		lo, hi []byte
	}
	backings := map[uint64]*backing{}
	for _, level := range levels {
		for _, t := range level {
			if !t.Virtual {
				continue
			}
			b := backings[uint64(t.BackingSSTNum)]
			if b == nil {
				b = &backing{}
				backings[uint64(t.BackingSSTNum)] = b
			}
			b.live += int64(t.Size)
			if b.lo == nil || bytes.Compare(t.Smallest.UserKey, b.lo) < 0 {
				b.lo = t.Smallest.UserKey
			}
			if b.hi == nil || bytes.Compare(t.Largest.UserKey, b.hi) > 0 {
				b.hi = t.Largest.UserKey
			}
		}
	}
	for num, b := range backings {
		if slices.Contains(skip, num) {
			continue
		}
		fi, err := s.fs.Stat(filepath.Join(s.dir, fmt.Sprintf("%06d.sst", num)))
		if err != nil {
			continue // compacted away meanwhile, or not local: nothing to say
		}
		if d := fi.Size() - b.live; d > b.live {
			dead += d
			nums = append(nums, num)
			if lo == nil || bytes.Compare(b.lo, lo) < 0 {
				lo = b.lo
			}
			if hi == nil || bytes.Compare(b.hi, hi) > 0 {
				hi = b.hi
			}
		}
	}
	return lo, hi, dead, nums, nil
}

// reclaimSpace starts a compaction of the virtual tables whose files are
// mostly dead, if there are at least reclaimMin dead bytes and none is
// running; it logs the end of the one before.
//
// A compaction of a span whose one table overlaps no other is a move to
// the level below (Pebble's), which leaves the virtual table as it was,
// and Pebble never compacts its last level into itself. So the backing
// tables the last reclaim was started for are not looked at again (they
// would start a reclaim that does nothing at every barrier), until the
// next reclaim for others takes them along if they are in its span, or
// a compaction of Pebble's own rewrites them, once flushes overlap them.
func (s *Store) reclaimSpace() {
	if r := s.reclaiming; r != nil {
		select {
		case <-r.done:
		default:
			return
		}
		s.reclaiming = nil
		s.reclaimed = r.nums
		if r.err != nil {
			s.log.Warn().Err(r.err).Int64("dead_bytes", r.dead).Msg("compacting expired tables' files failed; the next barrier tries again")
		} else {
			s.log.Debug().Int64("dead_bytes", r.dead).Dur("took", r.took).Msg("expired tables' files compacted")
		}
	}
	lo, hi, dead, nums, err := s.deadSpan(s.reclaimed)
	if err != nil || dead < reclaimMin {
		return
	}
	if bytes.Compare(lo, hi) >= 0 { // Compact wants start < end; its end is inclusive
		hi = append(bytes.Clone(hi), 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &reclaim{cancel: cancel, done: make(chan struct{}), dead: dead, nums: nums}
	s.reclaiming = r
	db := s.db
	lo, hi = bytes.Clone(lo), bytes.Clone(hi)
	go func() {
		defer close(r.done)
		start := time.Now()
		if err := db.Compact(ctx, lo, hi, false); err != nil && ctx.Err() == nil {
			r.err = fmt.Errorf("compact [%q, %q]: %w", lo, hi, err)
		}
		r.took = time.Since(start)
	}()
}

// stopReclaim cancels a running reclaim (what Pebble has not begun of it)
// and waits for it, before the database closes.
func (s *Store) stopReclaim() {
	if r := s.reclaiming; r != nil {
		r.cancel()
		<-r.done
		s.reclaiming = nil
	}
}
