package state

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// levelOptions sets the tables' filters. Below L0 a table has a bloom
// filter: keyed state is read by point lookups, and a filter answers those
// for keys not there without reading and decompressing a block.
//
// L0's tables are what memtable flushes write: every entry a transform
// writes goes through one, and most of them expire (a dedup's buckets are
// range-deleted within a few TTLs) or are compacted into the levels below
// soon after, which build their filters then. L0 tables have none (Pebble's
// own default): a dedup looks up only entries its in-memory index says are
// there, which a filter cannot skip, and building it took 3% of the
// dedup's CPU (bench/RESULTS.md, "L0 tables without a filter").
// Compression stays Pebble's default (snappy) at every level: without it
// L0 took 5% less CPU but the state database grew 2.5x.
func levelOptions(opts *pebble.Options) {
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	opts.Levels[0].FilterPolicy = pebble.NoFilterPolicy
}
