package slicepool

import "sync"

// Pool hands out slices of T with at least a requested capacity. The zero
// value is ready to use; a Pool must not be copied after first use.
type Pool[T any] struct {
	arrays sync.Pool // *[]T holding a free array
	boxes  sync.Pool // empty *[]T, so that Get and Put need not allocate one
}

// Get returns an empty slice with room for at least n elements: a free
// array from the pool, or a new one if the pool has none that large. The
// elements beyond its length are whatever Put was given; callers that need
// them zero clear them before Put.
func (p *Pool[T]) Get(n int) []T {
	box, ok := p.arrays.Get().(*[]T)
	if !ok {
		return make([]T, 0, n)
	}
	s := *box
	*box = nil
	p.boxes.Put(box)
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// Put gives s's array back; the caller must not use s afterwards.
func (p *Pool[T]) Put(s []T) {
	if cap(s) == 0 {
		return
	}
	box, ok := p.boxes.Get().(*[]T)
	if !ok {
		box = new([]T)
	}
	*box = s[:0]
	p.arrays.Put(box)
}
