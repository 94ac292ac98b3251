package transform

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/connector-dev/connector/config"

	"github.com/connector-dev/connector/record"
)

// Transform is one step of a job's pipeline.
//
// Lifecycle, as the runtime uses it:
//
//  1. Each worker builds its own instances (one per worker, never shared),
//     after restoring the worker's KV from the checkpoint being resumed.
//  2. The worker calls Apply from a single goroutine, once per record, in
//     the order the records arrive. Apply is not safe for concurrent use.
//  3. Apply may rewrite r.Value and r.Key in place (replacing the slices,
//     never writing into the bytes it was given); keep=false drops the
//     record. On error the record is neither kept nor dropped: the runtime
//     applies the job's policy (fail, skip, dead-letter) to it. An error
//     wrapping ErrDecode leaves r.Value as it was.
//  4. At a barrier, the runtime calls Flush on a transform that is a
//     Flusher, then snapshots the KV: a stateful transform keeps all its
//     state in the KV it was given (some of it held back in memory until
//     Flush), so the worker's snapshot of that KV is the transform's
//     snapshot, and a restore is simply a new instance on the restored KV.
//     What a Flusher held back when the process stopped without a barrier
//     is lost with the records it came from, which a restore replays.
//
// Replay after a restart must give the same results as the first run, so a
// transform is a deterministic function of the record and its KV: it uses
// the record's Timestamp, not the wall clock, and no randomness. (One
// exception: a dedup bounds how far a record stamped past the host's clock
// moves its expiry by that clock; see Dedup.clamp.)
type Transform interface {
	Apply(r *record.Record) (keep bool, err error)
}

// KV is the keyed state a stateful transform keeps, one per worker (the
// state package's Pebble store satisfies it). It is called from the
// worker's goroutine only.
//
// Get returns the value under key; the caller may use it until its next
// call on the KV. Set and Delete must not retain key or value after they
// return: callers reuse those buffers. Any error is fatal for the task.
//
// Get, Set and Delete act in the record's key group; Expire in all of the
// KV's at once. It removes the keys k with start <= k < end, to free the
// space of state the transform will never read again (a dedup's expired
// entries): it is not part of the state's history, so a restore may bring
// such keys back (state package: changelogs do not record it), and the
// transform must not tell them apart from absent keys by reading them. No
// key may be a proper prefix of start or of end. Scan calls fn with every
// key in [start, end) of all the KV's key groups and its value (valid
// during the call), in no particular order, for a transform that rebuilds
// an index of its state when it starts; it stops at fn's first error.
type KV interface {
	Get(key []byte) (value []byte, ok bool, err error)
	Set(key, value []byte) error
	Delete(key []byte) error
	Expire(start, end []byte) error
	Scan(start, end []byte, fn func(key, value []byte) error) error
}

// Flusher is a stateful Transform that holds some of its writes back in
// memory (a dedup's runs of entries, dedupruns.go). Flush writes them to
// the KV: after it, the KV holds what every record applied so far wrote,
// as a snapshot needs. Flush may leave the KV in another key group than
// the record's (KeyGroups): the runtime sets it again before the next one.
type Flusher interface {
	Flush() error
}

// KeyGroups is a KV with key groups (package state's Store): KeyGroup is
// the key group Get, Set and Delete act in, the record's, which
// SetKeyGroup changes. A Flusher writes what records of several key
// groups held back, each in its own. A KV without them (MemKV) has one.
type KeyGroups interface {
	KeyGroup() int
	SetKeyGroup(kg int) error
}

// Kinds of built-in transforms, as written in the config's "type".
const (
	KindFilter  = "filter"
	KindProject = "project"
	KindDedup   = "dedup"
)

// New builds the transform of a registered kind from cfg, a value of its
// config struct or a pointer to one. kv is used by stateful kinds only and
// may be nil otherwise.
func New(kind string, cfg any, kv KV) (Transform, error) {
	k, ok := lookup(kind)
	if !ok {
		return nil, configError("type", "%q is not one of %s", kind, strings.Join(names(), ", "))
	}
	c := k.Config()
	switch v := reflect.ValueOf(cfg); {
	case cfg == nil:
		return nil, configError("type", "%s wants a %s, got nothing", kind, reflect.TypeOf(c).Elem())
	case v.Type() == reflect.TypeOf(c):
		c = cfg
	case reflect.PointerTo(v.Type()) == reflect.TypeOf(c):
		reflect.ValueOf(c).Elem().Set(v)
	default:
		return nil, configError("type", "%s wants a %s, got %T", kind, reflect.TypeOf(c).Elem(), cfg)
	}
	return k.New(c, kv)
}

// Spec is one entry of a pipeline's transform list.
type Spec struct {
	Kind   string
	Config any // the kind's config struct (FilterConfig, ...) or a pointer to one
}

// Specs turns the pipeline.transforms of a job into Specs.
func Specs(ps []config.Plugin) []Spec {
	out := make([]Spec, len(ps))
	for i, p := range ps {
		out[i] = Spec{Kind: p.Type, Config: p.Config}
	}
	return out
}

// Build makes the Chain of specs, in order, sharing kv. A dedup without a
// Name gets its ordinal among the list's dedups ("0", "1", ...), so adding
// or removing filters and projects keeps its state; adding a dedup before
// it does not, so give dedups a Name when the list may change. Errors name
// the entry: "transforms[2]: dedup.key: ...".
func Build(specs []Spec, kv KV) (*Chain, error) {
	ts := make([]Transform, 0, len(specs))
	names := make(map[string]int)
	dedups := 0
	for i, s := range specs {
		cfg := s.Config
		if s.Kind == KindDedup {
			dc, ok := dedupConfig(s, dedups)
			if !ok {
				return nil, fmt.Errorf("transforms[%d]: %w", i,
					configError("type", "dedup wants a DedupConfig, got %T", cfg))
			}
			if j, dup := names[dc.Name]; dup {
				return nil, fmt.Errorf("transforms[%d]: %w", i,
					configError("dedup.name", "%q is also the name of transforms[%d]", dc.Name, j))
			}
			names[dc.Name] = i
			dedups++
			cfg = dc
		}
		t, err := New(s.Kind, cfg, kv)
		if err != nil {
			return nil, fmt.Errorf("transforms[%d]: %w", i, err)
		}
		ts = append(ts, t)
	}
	return NewChain(ts...), nil
}

// dedupConfig is the config of dedup spec s, the n-th dedup of its list,
// named as Build names it; false if s holds no DedupConfig.
func dedupConfig(s Spec, n int) (DedupConfig, bool) {
	var dc DedupConfig
	switch c := s.Config.(type) {
	case DedupConfig:
		dc = c
	case *DedupConfig:
		dc = *c
	default:
		return dc, false
	}
	if dc.Name == "" {
		dc.Name = fmt.Sprint(n)
	}
	return dc, true
}

// DedupKeys maps the name of each dedup of specs (as Build names them) to
// its key field: the field whose values its state remembers, recorded
// with each checkpoint so that a restore can refuse a change of it (the
// values of the old field would be taken for the new one's, and records
// dropped).
func DedupKeys(specs []Spec) map[string]string {
	out := map[string]string{}
	n := 0
	for _, s := range specs {
		if s.Kind != KindDedup {
			continue
		}
		if dc, ok := dedupConfig(s, n); ok {
			out[dc.Name] = dc.Key
		}
		n++
	}
	return out
}

// docApplier is implemented by the built-ins: they work on the chain's
// shared decoded document instead of decoding the value themselves.
type docApplier interface {
	applyDoc(r *record.Record, d *document) (keep bool, err error)
}

// solo lets a built-in run on its own (outside a Chain) with the same code.
type solo struct {
	d document
	s slab
}

func (so *solo) apply(t docApplier, r *record.Record) (bool, error) {
	so.d.reset(r)
	keep, err := t.applyDoc(r, &so.d)
	if err == nil && keep && so.d.dirty {
		r.Value = so.d.encode(&so.s)
	}
	return keep, err
}
