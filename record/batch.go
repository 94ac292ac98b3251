package record

import "sync"

// Batches of records are the unit the source hands downstream, several
// thousand a second per reader. Their backing arrays are recycled through a
// pool instead of left to the garbage collector: at a million records a
// second, fresh batches were a third of the bytes the process allocated.
//
// Ownership: a batch from NewBatch belongs to whoever holds it; the last
// holder (the worker that wrote its records, or the emitter that copied them
// into per-worker parts) calls Release and must not touch it afterwards. A
// batch that is never released is simply garbage collected.

var batches = sync.Pool{New: func() any { return new([]Record) }}

// NewBatch returns an empty batch with room for at least n records.
func NewBatch(n int) []Record {
	p := batches.Get().(*[]Record)
	b := *p
	*p = nil
	boxes.Put(p)
	if cap(b) < n {
		return make([]Record, 0, n)
	}
	return b[:0]
}

// Release returns b's backing array to the pool. The records in it are
// zeroed first so that the pool keeps no record values alive.
func Release(b []Record) {
	if cap(b) == 0 {
		return
	}
	clear(b)
	p := boxes.Get().(*[]Record)
	*p = b[:0]
	batches.Put(p)
}

// boxes holds empty slice headers for the pool, so that neither NewBatch nor
// Release allocates in the steady state.
var boxes = sync.Pool{New: func() any { return new([]Record) }}
