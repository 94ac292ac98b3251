package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/connector-dev/connector/internal/spec"
	"github.com/connector-dev/connector/record"
)

// DedupConfig drops a record whose Key field value was already seen within
// TTL, measured on record timestamps.
type DedupConfig struct {
	// Name is the dedup's state namespace: its entries live in the KV under
	// "transform/dedup/<Name>/", so several dedups can share a store.
	// Letters, digits, '_', '-' and '.'; required by NewDedup (Build fills
	// it in with the dedup's ordinal). Changing it starts the dedup with no
	// memory.
	Name string `yaml:"name,omitempty" doc:"state namespace; default: the dedup's ordinal among the list's dedups"`
	// Key is the dotted path of the field whose value identifies a record.
	Key string `yaml:"key" doc:"dotted path of the field that identifies a record"`
	// TTL is how long a value is remembered: at least a millisecond, at
	// most maxTTL.
	TTL time.Duration `yaml:"ttl,omitempty" default:"10m" doc:"how long a value is remembered, by record time"`
}

// maxTTL bounds DedupConfig.TTL: a year of remembered keys is far more
// state than a dedup should keep.
const maxTTL = 365 * 24 * time.Hour

func init() {
	Register(Kind{
		Name:     KindDedup,
		Summary:  "drops a record whose key field value was seen within the TTL (keyed state)",
		Stateful: true,
		Config:   func() any { return new(DedupConfig) },
		New:      func(cfg any, kv KV) (Transform, error) { return NewDedup(*cfg.(*DedupConfig), kv) },
	})
}

// Validate reports every problem NewDedup would find; an empty name is
// fine (Build names the dedup).
func (c *DedupConfig) Validate(p *spec.Problems) {
	for _, err := range c.problems() {
		report(p, KindDedup, err)
	}
}

// problems lists what is wrong with c, besides a missing name.
func (c *DedupConfig) problems() []error {
	var errs []error
	if strings.IndexFunc(c.Name, badNameRune) >= 0 {
		errs = append(errs, configError("dedup.name", "%q: use letters, digits, '_', '-' and '.'", c.Name))
	}
	switch {
	case c.Key == "":
		errs = append(errs, configError("dedup.key", "is required"))
	case slices.Contains(strings.Split(c.Key, "."), ""):
		errs = append(errs, configError("dedup.key", "%q has an empty path segment", c.Key))
	}
	switch {
	case c.TTL < time.Millisecond:
		errs = append(errs, configError("dedup.ttl", "%v: must be at least 1ms", c.TTL))
	case c.TTL > maxTTL:
		errs = append(errs, configError("dedup.ttl", "%v: must be at most %v", c.TTL, maxTTL))
	}
	return errs
}

// Dedup is the dedup transform. Build it with NewDedup.
//
// The first record with a given key value is kept and its timestamp stored
// as the value's "first seen"; a later record with the same value is
// dropped while its timestamp is before first seen + TTL (so records older
// than the first one are dropped too), and kept otherwise, which starts a
// new window. Dropped records do not extend the window.
//
// Values are compared by type and content: strings by their decoded
// content, numbers by their text ("1" and "1.0" differ), bools and nested
// objects or arrays by their bytes. A record without the key field (or
// with null there) cannot be a duplicate: it is kept and counted in
// KeyMissing. A value that is not a JSON object is an ErrDecode error.
//
// State layout (one entry per remembered value):
//
//	key:   "transform/dedup/" Name "/" then, for a string, '"' and its
//	       decoded content; for anything else, its JSON text
//	value: 0x01 (format version), first seen as int64 big-endian Unix ms
//
// The KV is the record's key group's (see package state): a value is
// remembered within one key group, so the runtime keys records by the
// dedup's field (pipeline.key_by) for the dedup to be exact across Kafka
// keys.
//
// Entries are overwritten when their value recurs after the TTL; an entry
// whose value never recurs stays in the KV (the KV interface has no
// iteration to expire it).
type Dedup struct {
	path       []string
	ttl        int64 // ms
	kv         KV
	key        []byte // prefix, then the value being looked up
	prefix     int
	keyMissing atomic.Uint64
	solo       solo
}

var _ Transform = (*Dedup)(nil)

const dedupFormat = 1

// NewDedup validates cfg and returns its Dedup, keeping state in kv.
func NewDedup(cfg DedupConfig, kv KV) (*Dedup, error) {
	switch errs := cfg.problems(); {
	case cfg.Name == "":
		return nil, configError("dedup.name", "is required (the state namespace)")
	case len(errs) > 0:
		return nil, errs[0]
	case kv == nil:
		return nil, configError("dedup", "no state store (KV) given")
	}
	path := strings.Split(cfg.Key, ".")
	key := []byte("transform/dedup/" + cfg.Name + "/")
	return &Dedup{path: path, ttl: cfg.TTL.Milliseconds(), kv: kv, key: key, prefix: len(key)}, nil
}

func badNameRune(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.')
}

// Kind returns "dedup".
func (t *Dedup) Kind() string { return KindDedup }

// KeyMissing returns how many records were passed through for lacking the
// key field. Safe from any goroutine.
func (t *Dedup) KeyMissing() uint64 { return t.keyMissing.Load() }

// Apply drops r if its key value was seen within the TTL.
func (t *Dedup) Apply(r *record.Record) (bool, error) { return t.solo.apply(t, r) }

func (t *Dedup) applyDoc(r *record.Record, d *document) (bool, error) {
	raw, found, err := d.get(t.path)
	if err != nil {
		return false, err
	}
	if !found || raw[0] == 'n' {
		t.keyMissing.Add(1)
		return true, nil
	}
	k := t.key[:t.prefix]
	switch {
	case raw[0] != '"':
		k = append(k, raw...)
	case bytes.IndexByte(raw, '\\') < 0:
		k = append(k, raw[:len(raw)-1]...)
	default:
		k = append(append(k, '"'), unquote(raw)...)
	}
	t.key = k
	now := r.Timestamp.UnixMilli()
	v, seen, err := t.kv.Get(k)
	if err != nil {
		return false, fmt.Errorf("%w: dedup get: %w", ErrState, err)
	}
	if seen {
		if len(v) != 9 || v[0] != dedupFormat {
			return false, fmt.Errorf("%w: dedup entry %q: unknown format (%d bytes)", ErrState, k, len(v))
		}
		if first := int64(binary.BigEndian.Uint64(v[1:])); now < first+t.ttl {
			return false, nil
		}
	}
	var val [9]byte
	val[0] = dedupFormat
	binary.BigEndian.PutUint64(val[1:], uint64(now))
	if err := t.kv.Set(k, val[:]); err != nil {
		return false, fmt.Errorf("%w: dedup set: %w", ErrState, err)
	}
	return true, nil
}
