package offheap

import (
	"runtime"
	"sync/atomic"
)

// Words is a zeroed table of uint64s. W is valid while the *Words is
// reachable and not freed; the memory goes once it is not (see the
// package doc).
type Words struct {
	W       []uint64
	mem     []byte          // the mapping; nil for a table on the heap
	cleanup runtime.Cleanup // unmaps mem once the *Words is unreachable
}

// minMapped is the smallest table that is mapped rather than made: below
// it a mapping's pages and system calls cost more than the heap does.
const minMapped = 64 << 10

// mapped is the bytes of tables mapped and not yet unmapped.
var mapped atomic.Int64

// Mapped is how many bytes of tables are mapped now.
func Mapped() int64 { return mapped.Load() }

// New returns a zeroed table of n words. If the memory cannot be mapped,
// the table is an ordinary slice. Its pages become resident as they are
// first written (each a page fault; a read first maps the zero page, one
// more).
func New(n int) *Words { return newWords(n, false) }

// NewResident is New for a table its owner writes all over at once (a
// hash table a growth moves the entries of a smaller one into: half its
// slots, in every page): its pages are made resident by the mapping, in
// one system call, rather than one fault at a time. A dedup over 1M keys
// took 168k page faults in 10M records, 80% of them in its tables' first
// reads and writes (bench/RESULTS.md).
func NewResident(n int) *Words { return newWords(n, true) }

func newWords(n int, resident bool) *Words {
	if n*8 < minMapped {
		return &Words{W: make([]uint64, n)}
	}
	mem, w, err := mmapWords(n, resident)
	if err != nil {
		return &Words{W: make([]uint64, n)}
	}
	t := &Words{W: w, mem: mem}
	mapped.Add(int64(len(mem)))
	t.cleanup = runtime.AddCleanup(t, unmap, mem)
	return t
}

// Free gives the table's memory back now rather than after a collection
// finds it unreachable: for an owner that knows it and every slice of it
// are no longer used. A mapped table's W is nil after; a table on the Go
// heap (a small one) and a nil *Words are left as they are.
func (t *Words) Free() {
	if t == nil || t.mem == nil {
		return
	}
	t.cleanup.Stop()
	unmap(t.mem)
	t.W, t.mem = nil, nil
}

func unmap(mem []byte) {
	if munmap(mem) == nil {
		mapped.Add(-int64(len(mem)))
	}
}
