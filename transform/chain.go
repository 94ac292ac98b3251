package transform

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/connector-dev/connector/record"
)

// Chain applies transforms in order and stops at the first that drops the
// record or fails. It is itself a Transform with the same lifecycle: one
// per worker, Apply from one goroutine. Stats may be read from any
// goroutine: the counts as of the last Publish, which Apply's goroutine
// calls (the runtime's worker: after each batch).
//
// The value is decoded at most once per record: the built-ins share one
// decoded document, and the value is re-encoded once, at the end, only if a
// transform changed it. A chain of no transforms does not decode at all.
// Any other Transform in the chain sees r.Value re-encoded before it runs,
// and the value is decoded again after it if a later built-in needs it.
type Chain struct {
	steps    []step
	d        document
	s        slab
	prefetch []*Dedup // the dedups that read KeyField (UseKeyField)
}

type step struct {
	t    Transform
	da   docApplier // nil for a Transform from outside this package
	name string
	// The counts since the last Publish, Apply's goroutine's alone: an
	// atomic add (or store: an XCHG on amd64) per record and step drained
	// the CPU's store buffer, 5% of a dedup's CPU (bench/profile --dedup u).
	in, dropped, errs uint64
	// The counts as of the last Publish, which Stats reads.
	pub struct{ in, dropped, errs atomic.Uint64 }
}

var _ Transform = (*Chain)(nil)

// NewChain returns a Chain of ts, applied in that order.
func NewChain(ts ...Transform) *Chain {
	c := &Chain{steps: make([]step, len(ts))}
	for i, t := range ts {
		s := &c.steps[i]
		s.t = t
		s.da, _ = t.(docApplier)
		kind := "custom"
		if k, ok := t.(interface{ Kind() string }); ok {
			kind = k.Kind()
		}
		s.name = fmt.Sprintf("%d:%s", i, kind)
	}
	return c
}

// UseKeyField makes each dedup keyed by the field at path (pipeline.key_by)
// read its key from record.Record.KeyField, which the runtime sets for that
// field, instead of decoding the value again, if only filters (which never
// change a value) come before it. Call it before the first Apply.
func (c *Chain) UseKeyField(path string) {
	c.prefetch = c.prefetch[:0]
	for i := range c.steps {
		switch t := c.steps[i].t.(type) {
		case *Filter:
			continue
		case *Dedup:
			if t.useKeyField = strings.Join(t.path, ".") == path; t.useKeyField {
				c.prefetch = append(c.prefetch, t)
			}
			continue
		}
		return
	}
}

// Prefetch readies the chain for rs, the next records Apply will see
// (PrefetchWindow of them at a time): the dedups that read KeyField load
// the index slots their lookups of rs will probe first. It changes
// nothing but what is in the CPU's cache.
func (c *Chain) Prefetch(rs []record.Record) {
	for _, t := range c.prefetch {
		t.prefetch(rs)
	}
}

// Flush flushes the chain's Flushers, in order (see Flusher).
func (c *Chain) Flush() error {
	for i := range c.steps {
		if f, ok := c.steps[i].t.(Flusher); ok {
			if err := f.Flush(); err != nil {
				return fmt.Errorf("transform %s: %w", c.steps[i].name, err)
			}
		}
	}
	return nil
}

// Apply runs r through the chain. An error names the step that failed and
// wraps that step's error (so errors.Is(err, ErrDecode) works).
func (c *Chain) Apply(r *record.Record) (bool, error) {
	if len(c.steps) == 0 {
		return true, nil
	}
	c.d.reset(r)
	for i := range c.steps {
		s := &c.steps[i]
		s.in++
		var keep bool
		var err error
		if s.da != nil {
			keep, err = s.da.applyDoc(r, &c.d)
		} else {
			if c.d.dirty {
				r.Value = c.d.encode(&c.s)
			}
			keep, err = s.t.Apply(r)
			c.d.reset(r)
		}
		if err != nil {
			s.errs++
			return false, fmt.Errorf("transform %s: %w", s.name, err)
		}
		if !keep {
			s.dropped++
			return false, nil
		}
	}
	if c.d.dirty {
		r.Value = c.d.encode(&c.s)
	}
	return true, nil
}

// Stats counts what one step of a Chain saw.
type Stats struct {
	Name    string // "<index>:<kind>", e.g. "2:dedup"
	In      uint64 // records handed to the step
	Dropped uint64 // records it dropped (In - Dropped - Errors went on)
	Errors  uint64 // records it failed on
	// KeyMissing counts records a dedup passed through because they lack
	// the key field (zero for other kinds).
	KeyMissing uint64
}

// Publish makes the counts of the records applied since the last Publish
// visible to Stats. It is called from Apply's goroutine (the runtime's
// worker, after each batch).
func (c *Chain) Publish() {
	for i := range c.steps {
		s := &c.steps[i]
		if s.in == 0 {
			continue // so neither dropped nor failed any
		}
		s.pub.in.Add(s.in)
		s.pub.dropped.Add(s.dropped)
		s.pub.errs.Add(s.errs)
		s.in, s.dropped, s.errs = 0, 0, 0
	}
}

// Stats returns the counters of every step, in chain order, as of the last
// Publish. It is safe to call from any goroutine, concurrently with Apply.
func (c *Chain) Stats() []Stats {
	out := make([]Stats, len(c.steps))
	for i := range c.steps {
		s := &c.steps[i]
		out[i] = Stats{Name: s.name, In: s.pub.in.Load(), Dropped: s.pub.dropped.Load(), Errors: s.pub.errs.Load()}
		if d, ok := s.t.(*Dedup); ok {
			out[i].KeyMissing = d.KeyMissing()
		}
	}
	return out
}
