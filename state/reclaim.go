package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
// 0.45 MB of live virtual ones (bench/RESULTS.md, "2026-12-07, 09:41").
//
// At each barrier (Checkpoint) the Store looks at its virtual tables. Of
// those whose files are more than half dead, when the dead bytes are at
// least reclaimMin and at least the bytes of every table in their span
// (what a compaction of it rewrites), it compacts that span on a
// goroutine of its own: one at a time, never waited for by a barrier,
// cancelled (what has not begun) by Close.
// Compaction keeps every live key, so snapshots and changelogs are not
// concerned; a full snapshot taken meanwhile links whichever tables are
// current.

// reclaimMin is the least dead space worth a compaction.
const reclaimMin = 256 << 10

// reclaim is a compaction Store.reclaimSpace started, until it ends.
type reclaim struct {
	cancel context.CancelFunc
	done   chan struct{}
	dead   int64 // the dead bytes it was started for
	err    error // set before done is closed
	took   time.Duration
}

// deadTables is what a reclaim would compact: the span of the virtual
// tables whose backing tables hold more dead bytes than live ones, those
// dead bytes, and the bytes of every table of the span (which the
// compaction rewrites).
type deadTables struct {
	lo, hi  []byte
	dead    int64
	rewrite int64
}

// deadSpan returns the deadTables of the database.
func (s *Store) deadSpan() (d deadTables, err error) {
	levels, err := s.db.SSTables()
	if err != nil {
		return d, err
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
			b.lo, b.hi = widen(b.lo, b.hi, t.Smallest.UserKey, t.Largest.UserKey)
		}
	}
	for num, b := range backings {
		fi, err := s.fs.Stat(filepath.Join(s.dir, fmt.Sprintf("%06d.sst", num)))
		if err != nil {
			continue // compacted away meanwhile, or not local: nothing to say
		}
		if dead := fi.Size() - b.live; dead > b.live {
			d.dead += dead
			d.lo, d.hi = widen(d.lo, d.hi, b.lo, b.hi)
		}
	}
	if d.dead == 0 {
		return d, nil
	}
	// A compaction of L0 takes every L0 table that overlaps one it takes
	// (their keys' sequence numbers interleave), and what they span below.
	lo, hi := d.lo, d.hi
	overlaps := func(t pebble.SSTableInfo) bool {
		return bytes.Compare(t.Smallest.UserKey, hi) <= 0 && bytes.Compare(t.Largest.UserKey, lo) >= 0
	}
	for grown := len(levels) > 0; grown; {
		grown = false
		for _, t := range levels[0] {
			if overlaps(t) && (bytes.Compare(t.Smallest.UserKey, lo) < 0 || bytes.Compare(t.Largest.UserKey, hi) > 0) {
				lo, hi = widen(lo, hi, t.Smallest.UserKey, t.Largest.UserKey)
				grown = true
			}
		}
	}
	for _, level := range levels {
		for _, t := range level {
			if overlaps(t) {
				d.rewrite += int64(t.Size)
			}
		}
	}
	return d, nil
}

// widen returns the span [lo, hi] grown to take [a, b] in; a nil lo is
// an empty span.
func widen(lo, hi, a, b []byte) ([]byte, []byte) {
	if lo == nil || bytes.Compare(a, lo) < 0 {
		lo = a
	}
	if hi == nil || bytes.Compare(b, hi) > 0 {
		hi = b
	}
	return lo, hi
}

// reclaimSpace starts a compaction of the virtual tables whose files are
// mostly dead, if there are at least reclaimMin dead bytes, no fewer than
// the compaction would rewrite, and none is running; it logs the end of
// the one before. So a reclaim frees at least as many bytes as it writes
// of the tables it counted, and the dead bytes are at most about what the
// database holds besides: in bench/'s dedup over 1M keys, a reclaim
// whenever a span's files were mostly dead rewrote the whole database (10
// MB a worker) at most barriers, 14-186 ms of compaction each, for 0.7-1.5
// MB.
//
// It also writes what the memtables hold, uncounted: Compact flushes them
// first and compacts the L0 tables that makes in the span (up to two
// memtables, 2 MiB). At bench/state-growth's drain's end one counted 226
// KB to rewrite for 458 KB dead and compacted 1.1 MB. Counting them (the
// writes applied since a flush last began; the barrier asking for a flush
// when only they were in the way) did not lower that experiment's peak:
// 3.2, 2.9, 3.0, 2.2 MiB against 1.9, 2.9, 2.5, 2.2 without (bench/RESULTS.md,
// "2026-12-07 23:16").
//
// A compaction of a span whose one table overlaps no other is a move to
// the level below (Pebble's), which leaves the virtual table as it was,
// and Pebble never compacts its last level into itself: at rest, the
// tables a reclaim wrote at the last level, cut again by the next expiry,
// stayed there whole (bench/state-growth: 1.77 MB of file for 0.45 MB).
// So before it compacts, reclaimSpace writes the span's first key again,
// with its value (overlap): the memtable then overlaps the span, Compact
// flushes it, and the table it makes is compacted with those below, which
// rewrites them. (A span without a key to write holds only keys deleted
// in tables above it, which its compaction takes along.)
func (s *Store) reclaimSpace() {
	if r := s.reclaiming; r != nil {
		select {
		case <-r.done:
		default:
			return
		}
		s.reclaiming = nil
		if r.err != nil {
			s.log.Warn().Err(r.err).Int64("dead_bytes", r.dead).Msg("compacting expired tables' files failed; the next barrier tries again")
		} else {
			s.log.Debug().Int64("dead_bytes", r.dead).Dur("took", r.took).Msg("expired tables' files compacted")
		}
	}
	d, err := s.deadSpan()
	if err != nil || d.dead < reclaimMin || d.dead < d.rewrite {
		return
	}
	lo, hi := bytes.Clone(d.lo), bytes.Clone(d.hi)
	if bytes.Compare(lo, hi) >= 0 { // Compact wants start < end; its end is inclusive
		hi = append(hi, 0)
	}
	if err := s.overlap(lo, hi); err != nil {
		s.log.Warn().Err(err).Msg("compacting expired tables' files: not started; the next barrier tries again")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &reclaim{cancel: cancel, done: make(chan struct{}), dead: d.dead}
	s.reclaiming = r
	db := s.db
	go func() {
		defer close(r.done)
		start := time.Now()
		if err := db.Compact(ctx, lo, hi, false); err != nil && ctx.Err() == nil {
			r.err = fmt.Errorf("compact [%q, %q]: %w", lo, hi, err)
		}
		r.took = time.Since(start)
	}()
}

// overlap writes the first key in [lo, hi] again with its value: the
// state is as it was (and no changelog needs it), but the memtable holds a
// key of the span.
func (s *Store) overlap(lo, hi []byte) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: append(bytes.Clone(hi), 0)})
	if err != nil {
		return err
	}
	var k, v []byte
	if it.First() {
		k = bytes.Clone(it.Key())
		if v, err = it.ValueAndErr(); err == nil {
			v = bytes.Clone(v)
		}
	}
	if err = errors.Join(err, it.Close()); err != nil || k == nil {
		return err
	}
	return s.db.Set(k, v, pebble.NoSync)
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
