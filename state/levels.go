package state

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable/block"
)

// levelOptions sets the tables' filters and compression. Below L0 a table
// has a bloom filter: keyed state is read by point lookups, and a filter
// answers those for keys not there without reading and decompressing a
// block.
//
// L0's tables are what memtable flushes write: every entry a transform
// writes goes through one, and most of them expire (a dedup's buckets are
// range-deleted within a few TTLs) or are compacted into the levels below
// soon after, which build their filters then. L0 tables have none (Pebble's
// own default): a dedup looks up only entries its in-memory index says are
// there, which a filter cannot skip, and building it took 3% of the
// dedup's CPU (bench/RESULTS.md, "L0 tables without a filter").
//
// Below L0 tables are compressed with zstd at level 1 (zstd1, below), not
// Pebble's default, snappy. A dedup's entries are times and ids (mostly
// digits), which snappy's byte matching shortens little and zstd's entropy
// coding does. What stays in the state database is below L0: a reclaim's
// rewrite of the kept buckets, compactions' outputs. In
// bench/state-growth (50M ids that never repeat, ttl 30 s) it fell at rest
// from 0.8-1.0 MiB to 0.5-0.6, and its peak at a backlog's end from
// 2.1-3.7 to 1.9-3.1 (bench/RESULTS.md, "2026-12-08 01:58"). L0, which
// every entry written goes through (memtable flushes), stays snappy: zstd
// there too kept that peak at or under 2.1 MiB in all runs but one, but
// took 6% more of the dedup's CPU over 1M keys. Over 10M new keys, whose
// compactions rewrite what they write, zstd at every level took an eighth
// more CPU; below L0 only, no more than snappy's spread (1.12 CPU s per
// million records against 1.03-1.20). Without compression L0 took 5% less
// CPU but the database grew 2.5x. The container image links Pebble's zstd
// from C (cgo); a build without cgo gets Pebble's pure-Go zstd, slower.
func levelOptions(opts *pebble.Options) {
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[i].Compression = func() *block.CompressionProfile { return zstd1 }
	}
	opts.Levels[0].FilterPolicy = pebble.NoFilterPolicy
	opts.Levels[0].Compression = func() *block.CompressionProfile { return block.SnappyCompression }
}

// zstd1 is the compression below L0: zstd at level 1 for every block, kept
// as it is where zstd shortens a block by less than 12% (as Pebble's
// simple profiles do). Pebble names that setting only as its "Balanced"
// profile's data blocks; that profile itself falls back to MinLZ where
// zstd gains less than 20% over it, and MinLZ for its other blocks, which
// a table format before Pebble's v6 (formatVersion's) cannot hold: there
// the whole profile falls back to snappy. TestTablesAreZstd1 checks the
// setting is zstd's level 1. The name goes into each table's properties
// and the OPTIONS file, which a Store does not read back.
var zstd1 = func() *block.CompressionProfile {
	p := *block.BalancedCompression
	p.Name = "zstd1"
	p.OtherBlocks = p.DataBlocks
	p.AdaptiveReductionCutoffPercent = 0
	p.MinReductionPercent = 12
	return &p
}()
