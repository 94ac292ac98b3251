// Package registry is a named, concurrency-safe table of kinds: the one
// piece behind the source, sink, transform and config registries. It owns
// no kind and knows nothing about them.
package registry

import (
	"fmt"
	"slices"
	"sync"
)

// Of holds values of one sort (its what names them in panics) by name. The
// zero value is ready to use; it is safe for concurrent use.
type Of[T any] struct {
	What string // for messages: "sink kind"

	mu sync.Mutex
	m  map[string]T
}

// Add registers v under name. A name registered twice is a bug: it panics.
func (r *Of[T]) Add(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("%s %q registered twice", r.What, name))
	}
	r.m[name] = v
}

// Get returns the value registered under name.
func (r *Of[T]) Get(name string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	return v, ok
}

// Names returns every registered name, sorted.
func (r *Of[T]) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
