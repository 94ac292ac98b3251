package record

import "github.com/connector-dev/connector/internal/slicepool"

// Batches of records are the unit the source hands downstream, several
// thousand a second per reader. Their backing arrays are recycled through a
// pool instead of left to the garbage collector: at a million records a
// second, fresh batches were a third of the bytes the process allocated.
//
// Ownership: a batch from NewBatch belongs to whoever holds it; the last
// holder (the worker that wrote its records, or the emitter that copied them
// into per-worker parts) calls Release and must not touch it afterwards. A
// batch that is never released is simply garbage collected.

var batches slicepool.Pool[Record]

// NewBatch returns an empty batch with room for at least n records.
func NewBatch(n int) []Record { return batches.Get(n) }

// Release returns b's backing array to the pool. The records in it are
// zeroed first so that the pool keeps no record values alive.
func Release(b []Record) {
	clear(b)
	batches.Put(b)
}
