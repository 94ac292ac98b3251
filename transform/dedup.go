package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/connector-dev/connector/config"
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

// ValidateJob checks the dedup against the job: its keyed state needs
// records shuffled by key group.
func (c *DedupConfig) ValidateJob(j *config.Job, p *spec.Problems) {
	if j.Pipeline.Route == config.RoutePartition {
		p.Add("pipeline.route", "is partition, but a dedup keeps keyed state, which needs the records of a key on one worker: use key or auto")
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
// The KV is the record's key group's (see package state): a value is
// remembered within one key group, so the runtime keys records by the
// dedup's field (pipeline.key_by) for the dedup to be exact across Kafka
// keys.
//
// # State, and how it stays bounded
//
// Entries live in time buckets one TTL wide, by first seen: a window that
// matters to a record at time t began after t - TTL, so it is in t's
// bucket or the one before (or, for a record older than windows begun
// after it, the one after, looked at only once a record of that bucket was
// seen). A lookup reads those buckets, newest first; the first entry found
// is the value's current window. When the newest record time seen enters a
// new bucket B, every bucket below B-2 is removed at once (KV.Expire: in
// package state, the tables wholly inside leave the database unread, see
// state/expire.go), which frees their space: the state holds at
// most three TTLs of first sightings (after a change of ttl, also the
// earlier ttl's, for two new TTLs), whether values repeat or not, and a
// record up to a TTL older than the newest seen (skew between partitions)
// finds every window that began within a TTL before it. A record more than
// a TTL older than the newest may miss a window whose bucket is gone, and
// be kept; the buckets such records write into again are removed once no
// record came to them for a while (staleEvery records, or from one barrier
// to the next), so that a backlog whose partitions drift apart in time
// does not pile them up, even after its last record. The newest record
// time seen moves at most a TTL past the host's clock (clamp): a record
// stamped years ahead does not expire the present's buckets. Its own
// bucket, ahead, goes when more than maxAhead buckets are ahead
// (evictAhead).
//
// Most lookups are for values not seen within the TTL, and a KV lookup
// costs an iterator per level even for an absent key. So a Dedup keeps, per
// bucket, an index in memory (dedupindex.go) of its values' hashes, and
// reads the KV only for an entry of the value's hash that may be within the
// TTL (a repeat, or another value sharing its fingerprint). At its first
// record it builds the index by scanning the KV (KV.Scan: after a restore,
// the state of the checkpoint), and takes the newest first sighting there
// as the newest record time seen.
//
// A bucket's entries are numbered in the order they are written, and the
// number, not the value, is in the key: the KV receives its keys in
// ascending order, so the sorted runs it writes (Pebble's memtable flushes)
// do not overlap and are not merged and rewritten again and again while
// they live (in the dedup of bench/, the rewriting of value-ordered keys
// took half the CPU). The value is in the entry, and a lookup compares it.
// Numbered entries are written in runs of 64 of a key group, one KV entry
// each (dedupruns.go), held in memory until a run fills or the runtime
// calls Flush before a snapshot. Past indexCap values in a bucket, and in
// state of earlier versions, entries are keyed by value instead; a Bloom
// filter of their hashes keeps most lookups of new values from reading
// them.
//
//	key:   "transform/dedup/" Name "/" 0x00 0x01, the bucket width (the
//	       ttl, int64 big-endian ms), bucket (int64 big-endian, sign
//	       bit flipped: buckets sort in time order), then
//	       a run: 0x02 and its first number (uint32 big-endian);
//	       numbered (earlier versions): 0x01 and the entry's number;
//	       by value: for a string, '"' and its decoded content; for
//	       anything else, its JSON text (never 0x01 or 0x02 first)
//	value: a run: 0x03 (format), then its entries (dedupruns.go);
//	       numbered: 0x02 (format), first seen (int64 big-endian Unix ms),
//	       the value as in a by-value key;
//	       by value: 0x01 (format), first seen
//
// A bucket's number is its time over the ttl it was written with, so the
// key names the width: the entries of another width (the ttl changed
// between two runs) are read apart, and those of the version before the
// width was in the key (without 0x01 and the width) as of the current ttl
// (dedupwidth.go).
//
// Earlier versions kept one entry per value, without bucket ("transform/
// dedup/" Name "/" then the value), never removed. A Dedup that finds some
// at its first record reads them too, until the newest record time seen is
// two TTLs past the newest of them, and then removes them all.
type Dedup struct {
	path       []string
	ttl        int64 // ms
	kv         KV
	ns         []byte // "transform/dedup/" Name "/"
	key        []byte // scratch: the key being looked up
	val        []byte // scratch: the value looked up
	keyMissing atomic.Uint64
	solo       solo
	// useKeyField: the key is pipeline.key_by's field, and record.Record's
	// KeyField is where it is (Chain.UseKeyField).
	useKeyField bool

	started    bool
	maxSeen    int64        // the newest record time seen, ms, at most a lead past the clock (clamp)
	clock      func() int64 // the host's clock, Unix ms (see clamp)
	ceiling    int64        // clamp's bound: the clock's time plus the lead, when last read
	expiredTo  int64        // buckets below it were expired, once started
	records    uint64       // records that had a value, for expireStale
	flushed    uint64       // records at the last Flush (a barrier), for expireStale
	legacy     bool         // unbucketed entries of earlier versions are read, until
	legacyEnd  int64        // maxSeen reaches this
	index      index        // the buckets of the current generation (dedupwidth.go)
	gen        keySpan
	old        []*oldGeneration // of other widths (an earlier ttl), until they expire
	hash       uint64           // the current value's
	kgs        KeyGroups        // kv's key groups; nil: it has one
	freeRuns   []*openRun       // written runs, whose buffers newRun reuses
	stamps     []uint64         // scratch: closeRuns's
	cache      runCache         // runs read from the KV (dedupruns.go)
	cands      []uint32         // scratch: entry numbers to read
	probe      uint64           // lookup's and prefetch's early loads end here (unused)
	prefetched uint64           // slots prefetch loaded (tests)
}

var _ Transform = (*Dedup)(nil)

const (
	dedupFormat  = 1    // a by-value entry's value
	numberFormat = 2    // a numbered entry's value
	bucketTag    = 0x00 // after the namespace: a bucketed entry
	numberTag    = 0x01 // after the bucket: a numbered entry
)

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
	ns := []byte(dedupPrefix + cfg.Name + "/")
	ttl := cfg.TTL.Milliseconds()
	kgs, _ := kv.(KeyGroups)
	return &Dedup{path: path, ttl: ttl, kv: kv, kgs: kgs, ns: ns, index: newIndex(maphash.MakeSeed(), ttl), gen: widthSpan(ns, ttl),
		clock: func() int64 { return time.Now().UnixMilli() }, ceiling: math.MinInt64}, nil
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
	raw, found := markedKey(r)
	if !t.useKeyField || !found {
		var err error
		if raw, found, err = d.get(t.path); err != nil {
			return false, err
		}
	}
	if !found || raw[0] == 'n' {
		t.keyMissing.Add(1)
		return true, nil
	}
	if form, ok := hashedForm(raw); ok {
		t.val = append(t.val[:0], form...)
	} else {
		t.val = appendUnquoted(append(t.val[:0], '"'), raw)
	}
	t.hash = maphash.Bytes(t.index.seed, t.val)
	now := recordTime(r)
	if err := t.advance(now); err != nil {
		return false, fmt.Errorf("%w: dedup expire: %w", ErrState, err)
	}
	first, seen, err := t.lookup(now)
	if err != nil {
		return false, fmt.Errorf("%w: dedup get: %w", ErrState, err)
	}
	if seen && now < first+t.ttl {
		return false, nil
	}
	b := t.bucket(now)
	if err := t.write(b, now); err != nil {
		return false, fmt.Errorf("%w: dedup set: %w", ErrState, err)
	}
	return true, nil
}

// timeBound bounds the record times a Dedup works with, in ms: a time
// within a few TTLs of ±2^63 would wrap the sums and differences that
// place buckets and windows (a repeat kept, or everything expired). 2^62
// ms is 146 million years from 1970.
const timeBound = 1 << 62

// recordTime is r's time in Unix ms, within ±timeBound.
func recordTime(r *record.Record) int64 {
	return min(max(r.Timestamp.UnixMilli(), -timeBound), timeBound)
}

// hashedForm returns the bytes a dedup keeps and hashes for a key field's
// raw JSON value (not null), when they are a part of raw: a value other
// than a string whole, a string without escapes from its opening quote to
// before its closing one (the quote keeps the string "1" apart from the
// number 1). An escaped string is unquoted first, and direct is false: its
// form is '"' and the unquoted bytes, which only the caller can build.
func hashedForm(raw []byte) (form []byte, direct bool) {
	switch {
	case raw[0] != '"':
		return raw, true
	case bytes.IndexByte(raw, '\\') < 0:
		return raw[:len(raw)-1], true
	}
	return nil, false
}

// markedKey returns the bytes of r's KeyField (the key_by field's value,
// which the runtime marks), if it marks some of r's value.
func markedKey(r *record.Record) ([]byte, bool) {
	k := r.KeyField
	if k.Start < 0 || k.Start >= k.End || int(k.End) > len(r.Value) {
		return nil, false
	}
	return r.Value[k.Start:k.End], true
}

// write stores the current value's first sighting at now in bucket b: a
// numbered entry (in a run, dedupruns.go) while the bucket's index has
// room, else a by-value one.
func (t *Dedup) write(b, now int64) error {
	if b > t.bucket(t.maxSeen)+1 && t.index.sets[b] == nil {
		if err := t.evictAhead(); err != nil {
			return err
		}
	}
	s := t.index.open(b)
	s.touched = t.records
	if s.n < indexCap {
		if numbered, err := t.writeNumbered(b, s, now); numbered || err != nil {
			return err
		}
	}
	s.putByValue(t.hash>>32, bloomFactor*indexCap)
	var v [9]byte
	v[0] = dedupFormat
	binary.BigEndian.PutUint64(v[1:], uint64(now))
	return t.kv.Set(t.bucketKey(&t.gen, b), v[:])
}

// bucket is the time bucket of record time ms.
func (t *Dedup) bucket(ms int64) int64 { return bucketOf(ms, t.ttl) }

// bucketOf is the bucket of width ms that time ms is in.
func bucketOf(ms, width int64) int64 {
	b := ms / width
	if ms < 0 && ms%width != 0 {
		b--
	}
	return b
}

// bucketPrefix appends the current generation's key head and bucket b to
// dst.
func (t *Dedup) bucketPrefix(dst []byte, b int64) []byte { return t.gen.bucketPrefix(dst, b) }

// bucketKey is the key of the current value's by-value entry in bucket
// b of the generation whose keys begin with g, in t.key.
func (t *Dedup) bucketKey(g *keySpan, b int64) []byte {
	t.key = append(g.bucketPrefix(t.key[:0], b), t.val...)
	return t.key
}

// numberKey is the key of entry n of bucket b of g, in t.key.
func (t *Dedup) numberKey(g *keySpan, b int64, n uint32) []byte {
	t.key = binary.BigEndian.AppendUint32(append(g.bucketPrefix(t.key[:0], b), numberTag), n)
	return t.key
}

// lookup finds the current value's window: its latest first sighting in
// the newest bucket that has one, of those that can matter at record time
// now.
func (t *Dedup) lookup(now int64) (first int64, seen bool, err error) {
	b := t.bucket(now)
	from := b
	if t.index.top > b { // the bucket after may hold a window begun after now
		from = b + 1
	}
	// The buckets' tables are large and each first probe misses the cache:
	// load every bucket's first slot before using any, so that the misses
	// overlap instead of following one another.
	var sets [3]*bucketIndex
	for c := from; c >= b-1; c-- {
		if s := t.index.sets[c]; s != nil {
			sets[from-c] = s
			t.probe ^= s.slots[home(t.hash>>32, len(s.slots))]
		}
	}
buckets:
	for c := from; c >= b-1; c-- {
		s := sets[from-c]
		if s == nil {
			continue
		}
		s.touched = t.records
		var expired bool
		if first, seen, expired, err = t.latestIn(&t.gen, c, s, now-t.ttl, first, seen); err != nil {
			return 0, false, err
		}
		switch {
		case seen && now < first+t.ttl:
			return first, true, nil // a window no earlier generation's can end before
		case seen:
			return t.lookupOld(now, first, true)
		case expired: // and so is every entry of older buckets
			break buckets
		}
	}
	if len(t.old) > 0 {
		if first, seen, err = t.lookupOld(now, 0, false); seen || err != nil {
			return first, seen, err
		}
	}
	if t.legacy {
		t.key = append(append(t.key[:0], t.ns...), t.val...)
		return t.get(t.key, false)
	}
	return 0, false, nil
}

// latestIn returns the latest first sighting of the current value among
// first (if seen) and the entries of bucket c (its index s) of the
// generation whose keys g places that may be after cutoff; expired is
// bucketIndex.numbered's.
func (t *Dedup) latestIn(g *keySpan, c int64, s *bucketIndex, cutoff, first int64, seen bool) (_ int64, _, expired bool, _ error) {
	t.cands, expired = s.numbered(t.hash, cutoff, t.cands[:0])
	for _, n := range t.cands {
		f, ok, err := t.getNumbered(g, c, s, n)
		if err != nil {
			return 0, false, false, err
		}
		if ok && (!seen || f > first) {
			first, seen = f, true
		}
	}
	if s.mayHoldByValue(t.hash) {
		f, ok, err := t.get(t.bucketKey(g, c), false)
		if err != nil {
			return 0, false, false, err
		}
		if ok && (!seen || f > first) {
			first, seen = f, true
		}
	}
	return first, seen, expired, nil
}

// get reads the first sighting of the entry under key k: a numbered one
// (whose value must be the current value's) or a by-value one.
func (t *Dedup) get(k []byte, numbered bool) (first int64, ok bool, err error) {
	v, ok, err := t.kv.Get(k)
	if err != nil || !ok {
		return 0, false, err
	}
	switch {
	case numbered && len(v) >= 9 && v[0] == numberFormat:
		if !bytes.Equal(v[9:], t.val) {
			return 0, false, nil // another value of the same fingerprint
		}
	case numbered || len(v) != 9 || v[0] != dedupFormat:
		return 0, false, fmt.Errorf("dedup entry %q: unknown format (%d bytes)", k, len(v))
	}
	return int64(binary.BigEndian.Uint64(v[1:])), true, nil
}

// advance moves the newest record time seen to now if later, after
// loading what the KV holds at the first record, and expires what no lookup
// of a record at most a TTL older than the newest reads any more: the
// buckets below the second before the newest's, the buckets of an earlier
// ttl two TTLs after their end (dedupwidth.go), and the unbucketed entries
// of earlier versions two TTLs after the newest of them.
func (t *Dedup) advance(now int64) error {
	now = t.clamp(now)
	if !t.started {
		if err := t.load(now); err != nil {
			return err
		}
		t.started = true
	}
	t.maxSeen = max(t.maxSeen, now)
	prune := false
	if keep := t.bucket(t.maxSeen) - 2; keep > t.expiredTo {
		if err := t.expireBelow(keep); err != nil {
			return err
		}
		t.expiredTo, prune = keep, true
	}
	if t.records++; t.records%staleEvery == 0 {
		if err := t.expireStale(t.records - staleEvery); err != nil {
			return err
		}
	}
	if err := t.expireOld(prune); err != nil {
		return err
	}
	if t.legacy && t.maxSeen >= t.legacyEnd {
		lo, hi := t.legacySpan()
		if err := t.kv.Expire(lo, hi); err != nil {
			return err
		}
		t.legacy = false
	}
	return nil
}

// clamp returns record time now as far as it moves the newest record time
// seen, and with it the expiry: at most a TTL past the host's clock, which
// moves the expiry at most one bucket further than the clock's time would:
// no record of the present loses a window. (A lead of a minute, whatever
// the TTL, was tried: with a TTL of 10 s it expired the present's buckets
// as a record far ahead did before.)
//
// A record stamped far in the future (a producer's clock or bug: Kafka
// takes any CreateTime a topic's message.timestamp.after.max.ms allows)
// would otherwise expire every bucket below its own, and with them the
// memory of every value the records at the present time repeat: each
// repeat within the TTL would be kept until the newest record time seen is
// reached. Its own entry still goes into its bucket by its own time; that
// bucket, ahead of the newest, goes when evictAhead needs room, or as any
// once the newest passes it. The clock is read only for a record past the
// last bound read.
//
// The clock bounds the expiry only, and only for records stamped past it:
// a replay after a restart (whose output the first run never committed)
// may decide otherwise than the first run only for records more than a
// TTL behind such a one (which may miss their window, as any record more
// than a TTL behind the newest may) or in a bucket ahead that was evicted.
func (t *Dedup) clamp(now int64) int64 {
	if now <= t.ceiling {
		return now
	}
	t.ceiling = min(t.clock(), timeBound) + t.ttl
	return min(now, t.ceiling)
}

// expireBelow removes the buckets below b from the KV and the index. From
// the first bucket, not from the last expired, so that whatever a bucket
// left behind (a lagging record's write into an expired bucket) goes too;
// with the range deletions Expire once was, one bucket at a time made
// bench/state-growth's state grow (partly covered files were never
// compacted).
func (t *Dedup) expireBelow(b int64) error {
	if err := t.kv.Expire(t.gen.lo, t.bucketPrefix(nil, b)); err != nil {
		return err
	}
	t.index.expire(b)
	return nil
}

// staleEvery is how often (in records) a Dedup looks for stale buckets:
// buckets below the expired ones, which records far behind the newest (a
// partition lagging in a backlog) wrote into again, and which no record
// read or wrote since the previous look. The newest's next bucket would
// expire them; until then (at the end of a backlog: never) they would
// pile up. Every barrier looks too (Flush), for the buckets no record came
// to since the barrier before or for staleEvery records: at the end of a
// backlog no record comes to make the next look, and those the lagging
// partitions wrote into last stayed while the input was idle
// (bench/state-growth's database at its end: 19 such buckets beside the
// three kept). A record that comes back to a stale bucket after it went
// may miss a window, as any record more than a TTL older than the newest
// may.
//
// It bounds what the lagging partitions' buckets hold at a backlog's end:
// the records of the last one to two staleEvery, 1.0-2.3 MiB of
// bench/state-growth's state database beside the kept buckets' 0.9. At
// 1<<14 that run drained at half to two thirds the speed (704k and 926k
// records/s against 1.47M and 1.35M): a partition's records reach a
// worker a fetch at a time, some 40k records apart, and its bucket went
// stale between two fetches, to be written and removed again. Looking
// every 1<<14 records for buckets stale for 1<<16 did not lower the peak
// (bench/RESULTS.md, "2026-12-07 23:16").
var staleEvery uint64 = 1 << 16 // a variable for tests

// expireStale removes the stale buckets: those below the expired ones that
// no record read or wrote after the record count since (see staleEvery).
// Not those ahead of the newest (evictAhead bounds them): a producer more
// than a TTL ahead of the clock writes there, and its records may be few
// among many on time.
func (t *Dedup) expireStale(since uint64) error {
	for b, s := range t.index.sets {
		if b >= t.expiredTo || s.touched > since {
			continue
		}
		if err := t.dropBucket(b); err != nil {
			return err
		}
	}
	return nil
}

// maxAhead is the most buckets a Dedup keeps ahead of the newest record
// time seen (past the bucket after its), which only records stamped more
// than a TTL past the host's clock write (clamp): enough for a producer
// steadily that far ahead to find its own windows (its bucket and the two
// before), beside one record far ahead.
const maxAhead = 4

// evictAhead makes room for a new bucket ahead (see maxAhead): it drops
// the least recently read or written of the buckets ahead while there are
// maxAhead. A record that comes back to a dropped bucket may miss a
// window, as one that comes back to a stale bucket may. Without the bound,
// a producer steadily more than a TTL ahead kept every bucket it wrote
// until the clock caught up (with a TTL of 1 ms and a producer 1 s fast, a
// thousand).
func (t *Dedup) evictAhead() error {
	ahead := t.bucket(t.maxSeen) + 1
	for {
		n, lru, least := 0, int64(0), uint64(math.MaxUint64)
		for b, s := range t.index.sets {
			if b > ahead {
				if n++; s.touched < least {
					lru, least = b, s.touched
				}
			}
		}
		if n < maxAhead {
			return nil
		}
		if err := t.dropBucket(lru); err != nil {
			return err
		}
	}
}

// dropBucket removes bucket b from the KV and the index.
func (t *Dedup) dropBucket(b int64) error {
	if err := t.kv.Expire(t.bucketPrefix(nil, b), t.bucketPrefix(nil, b+1)); err != nil {
		return err
	}
	t.index.drop(b)
	return nil
}

// load reads what the KV holds at the first record (at time now, clamped),
// after a start or a restore: it indexes every bucketed entry, and takes the
// newest first sighting among them (clamped) and now as the newest record
// time seen (the run that wrote them saw at least that much; a restore
// replays records from several partitions, older ones among them), and
// the buckets below the second before the newest entry's as expired
// already (as they were in the run that wrote them). Entries of earlier
// versions are read until two TTLs after the newest of them; with none,
// never.
func (t *Dedup) load(now int64) error {
	t.index.reset()
	for _, g := range t.old {
		g.free()
	}
	t.old = nil
	t.maxSeen, t.expiredTo = now, math.MinInt64
	stored := int64(math.MinInt64) // the newest first sighting in the current generation
	plain := plainSpan(t.ns)
	byWidth := map[int64]*oldGeneration{} // the earlier generations of keys that say their width
	var plainGen *oldGeneration
	old := func(span keySpan, w int64) *oldGeneration {
		g := newOldGeneration(t.index.seed, span, w)
		t.old = append(t.old, g)
		return g
	}
	lo := append(slices.Clone(t.ns), bucketTag, widthTag)
	hi := append(slices.Clone(t.ns), bucketTag+1)
	err := t.kv.Scan(lo, hi, func(key, v []byte) error {
		var g *oldGeneration // nil: the current generation
		var head int         // where the bucket begins
		if len(key) > len(t.ns)+1 && key[len(t.ns)+1] == widthTag {
			head = len(t.ns) + 10
			if len(key) < head {
				return fmt.Errorf("dedup entry %q: unknown format (%d bytes of key)", key, len(key))
			}
			switch w := int64(binary.BigEndian.Uint64(key[len(t.ns)+2:])); {
			case w == t.ttl:
			case w < 1:
				return fmt.Errorf("dedup entry %q: bucket width %d", key, w)
			default:
				if byWidth[w] == nil {
					byWidth[w] = old(widthSpan(t.ns, w), w)
				}
				g = byWidth[w]
			}
		} else {
			head = len(plain.head)
			if plainGen == nil {
				plainGen = old(plain, t.ttl) // an earlier version's: written with this ttl, we assume
			}
			g = plainGen
		}
		x := &t.index
		if g != nil {
			x = &g.index
		}
		bucket := head + 8 // a number or the value follows
		bad := len(key) <= bucket || len(v) < 9
		numbered := !bad && key[bucket] == numberTag
		run := !bad && key[bucket] == runTag
		switch {
		case numbered:
			bad = len(key) != bucket+5 || v[0] != numberFormat || binary.BigEndian.Uint32(key[bucket+1:]) >= 1<<31
		case run:
			bad = len(key) != bucket+5 || binary.BigEndian.Uint32(key[bucket+1:])%runLen != 0 || binary.BigEndian.Uint32(key[bucket+1:]) >= 1<<31
		case !bad:
			bad = len(v) != 9 || v[0] != dedupFormat
		}
		if bad {
			return fmt.Errorf("dedup entry %q: unknown format (%d bytes of key, %d of value)", key, len(key), len(v))
		}
		s := x.open(int64(binary.BigEndian.Uint64(key[head:]) ^ 1<<63))
		if run {
			n0 := binary.BigEndian.Uint32(key[bucket+1:])
			err := eachRunEntry(v, func(i int, first int64, val []byte) bool {
				h := maphash.Bytes(t.index.seed, val)
				s.put(h>>32, n0+uint32(i), first)
				t.maxSeen = max(t.maxSeen, first)
				if g != nil {
					g.loaded(first, uint32(h>>32))
				} else {
					stored = max(stored, first)
				}
				return true
			})
			if err != nil {
				return fmt.Errorf("dedup entry %q: %w", key, err)
			}
			return nil
		}
		s.numberedKeys = s.numberedKeys || numbered
		first := int64(binary.BigEndian.Uint64(v[1:]))
		var h uint64 // the value's hash: in the entry, or in the key
		if numbered {
			h = maphash.Bytes(t.index.seed, v[9:])
			s.put(h>>32, binary.BigEndian.Uint32(key[bucket+1:]), first)
		} else {
			h = maphash.Bytes(t.index.seed, key[bucket:])
			s.loaded = append(s.loaded, uint32(h>>32))
		}
		t.maxSeen = max(t.maxSeen, first)
		if g != nil {
			g.loaded(first, uint32(h>>32))
		} else {
			stored = max(stored, first)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range t.index.sets {
		s.seal()
	}
	for _, g := range t.old {
		g.seal()
	}
	// Entries stamped past the clock (clamp), kept in their buckets or
	// written by a version before clamp, move the newest no further than
	// the first record does.
	t.maxSeen = min(t.maxSeen, max(t.ceiling, now))
	stored = min(stored, t.maxSeen)
	if stored != math.MinInt64 {
		// The run that wrote these expired, at the latest when its newest
		// record time entered stored's bucket, the buckets below the
		// second before it: what the state holds below that, records far
		// behind the newest (a lagging partition) wrote afterwards, and it
		// kept them. So does this one, until its newest enters a later
		// bucket or they go stale (expireStale), as that run would have;
		// expiring them at the first record made a restore forget them.
		t.expiredTo = t.bucket(stored) - 2
	}
	legacy, newest := false, int64(math.MinInt64)
	lo, hi = t.legacySpan()
	err = t.kv.Scan(lo, hi, func(key, v []byte) error {
		if len(v) != 9 || v[0] != dedupFormat {
			return fmt.Errorf("dedup entry %q: unknown format (%d bytes)", key, len(v))
		}
		legacy, newest = true, max(newest, int64(binary.BigEndian.Uint64(v[1:])))
		return nil
	})
	if err != nil {
		return err
	}
	t.legacy, t.legacyEnd = legacy, newest+2*t.ttl
	return nil
}

// legacySpan bounds the unbucketed entries of earlier versions: their
// values begin with their JSON text's first byte, at least '"'; the
// namespace ends at its '/' plus one.
func (t *Dedup) legacySpan() (lo, hi []byte) {
	lo = append(slices.Clone(t.ns), bucketTag+1)
	hi = append(slices.Clone(t.ns[:len(t.ns)-1]), '/'+1)
	return lo, hi
}
