package state

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/keygroup"
)

// ErrClosed is returned by every method of a Store after Close.
var ErrClosed = errors.New("state: store is closed")

// testPebbleOptions lets a test force Pebble's behaviour (no background
// compaction, say) so that its assertion does not depend on timing. Nil
// outside tests.
var testPebbleOptions func(*pebble.Options)

// cacheSize is each Store's block cache: enough for the index, filter and
// hot data blocks of a few million small keys.
const cacheSize = 64 << 20

// memTableSize is a memtable's size (open).
const memTableSize = 1 << 20

// Store is one worker's keyed state, the key groups Config.KeyGroups,
// backed by a Pebble database in Config.Dir.
//
// A Store is not safe for concurrent use: one goroutine (the worker) calls
// all of its methods. The caller MUST call Close when done with it.
type Store struct {
	db  *pebble.DB
	fs  vfs.FS
	dir string
	log zerolog.Logger
	wal bool // see open
	// shared holds the immutable files the previous snapshot (or the
	// restored checkpoint) held, to count the files a snapshot shares.
	shared map[string]struct{}

	// Key groups (keys.go).
	keyGroups keygroup.Range
	maxPar    int
	kg        uint16 // the current key group
	key       []byte // scratch: the Pebble key of the call
	kgErr     error  // nil once SetKeyGroup set a key group in range

	// Incremental snapshots (incremental.go).
	fullAfter int64
	delta     *delta // writes since the last barrier; nil: outgrew fullAfter
	seq       uint64 // barriers seen by Checkpoint
	chain     chain  // the snapshot the next Checkpoint extends
	last      *Pending
	pool      chan []byte // empty chunks for the deltas (changelog.go)
	bg        *background // a full snapshot on its own goroutine, until adopted
	release   func(paths ...string)

	stalls  *stalls        // Pebble's write stalls (stalls.go)
	flushes *flushFailures // Pebble's failed flushes, for flushWait (flush.go)
	pend    *pebble.Batch  // Sets and Deletes not applied yet (pending.go)

	reclaiming *reclaim // a compaction of expired tables' files (reclaim.go)

	stream  *stream // the delta's changelog, written as it fills (stream.go)
	streams int     // streams started: each has a name of its own
	opened  string  // this Open's part of its streams' names (stream.go)
}

// Open wipes cfg.Dir, restores cfg.Restore into it, and opens the state
// database there. See the package documentation for the lifecycle.
func Open(cfg Config, log zerolog.Logger) (*Store, error) {
	return open(cfg, log, false)
}

// open is Open with a choice of write-ahead log. Open turns Pebble's WAL
// off: a checkpoint's changelog (see Checkpoint) is what makes writes
// durable, and a full snapshot flushes the memtable first. With the WAL on
// (unsynced), a full snapshot syncs and copies the live WAL instead, which
// is quicker, but every write costs more and the disk gets the WAL's bytes
// too (bench_test.go measures both; bench/RESULTS.md, "Design
// measurements", has the job-level figures).
func open(cfg Config, log zerolog.Logger, wal bool) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log = log.With().Str("component", "state").Str("dir", cfg.Dir).Logger()
	for _, dir := range []string{cfg.Dir, cfg.scratchDir()} {
		if err := cfg.FS.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("wipe state dir %s: %w", dir, err)
		}
	}
	if err := removeStreams(cfg.FS, cfg.Dir); err != nil {
		return nil, err
	}
	if err := cfg.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", cfg.Dir, err)
	}
	plan := planRestore(cfg)
	var shared map[string]struct{}
	if base := plan.base(); base != "" {
		var err error
		if shared, err = copyCheckpoint(cfg.FS, base, cfg.Dir); err != nil {
			return nil, fmt.Errorf("restore %s into %s: %w", base, cfg.Dir, err)
		}
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB holds its own reference
	stalls := newStalls(log)
	listener := stalls.listener()
	flushes := &flushFailures{}
	listener.FlushBegin = func(info pebble.FlushInfo) { flushes.began(info.JobID) }
	listener.FlushEnd = func(info pebble.FlushInfo) {
		// A flush of nothing ends with Pebble's errEmptyTable (unexported),
		// and its waiters are released as for any flush that succeeded.
		err := info.Err
		if err != nil && err.Error() == "pebble: empty table" {
			err = nil
		}
		flushes.ended(info.JobID, err)
	}
	opts := &pebble.Options{
		FS:            cfg.FS,
		Logger:        newPebbleLogger(log),
		DisableWAL:    !wal,
		Cache:         cache,
		EventListener: &listener,
	}
	levelOptions(opts)
	// Keyed state is mostly written (a dedup writes every first sighting and
	// reads Pebble only for values its in-memory index says it has seen), and
	// most of what is written expires by range deletion within a few TTLs.
	// With Pebble's defaults (compact L0 at 4 files, 64 MB in the base level)
	// most of the CPU went to rewriting entries that nobody reads and that
	// were about to expire. L0 takes 16 memtable flushes before it is
	// compacted, the base level 512 MB, and expired ranges leave the
	// database by Excise (expire.go), which needs formatVersion. Measured
	// in bench/RESULTS.md ("Pebble's compaction thresholds", "Expiry by
	// excise").
	opts.FormatMajorVersion = formatVersion
	// Every flush and every Expire appends an edit to Pebble's manifest,
	// and a full snapshot copies it. At Pebble's default (rotate at 128 MB)
	// it outgrew the state itself: 0.5 MB beside 1.3 MB of tables in
	// bench/state-growth. Rotated at 64 KiB it holds the live tables and
	// the edits since (Pebble also waits for as many edits as tables).
	opts.MaxManifestFileSize = 64 << 10
	// A memtable of 1 MiB, not Pebble's 4: a store holds two at its peak
	// (one filling, one flushing), at 4 MiB 16 MiB of bench/'s dedup's
	// peak RSS over its two workers. At 2 MiB its peak RSS fell 12-14 MiB
	// and its CPU did not rise (the flushes are as many bytes;
	// bench/RESULTS.md, "2026-12-06, 22:55"); L0 is compacted after as
	// many flushes, so twice as often by bytes, which a threshold of 32
	// did not improve. At 1 MiB it fell 3 MiB more, the CPU again the
	// same ("2026-12-07, 15:50").
	opts.MemTableSize = memTableSize
	opts.L0CompactionThreshold = 16
	opts.L0StopWritesThreshold = 64
	opts.LBaseMaxBytes = 512 << 20
	if testPebbleOptions != nil {
		testPebbleOptions(opts)
	}
	db, err := openPebble(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", cfg.Dir, err)
	}
	s := &Store{db: db, fs: cfg.FS, dir: cfg.Dir, log: log, wal: wal, shared: shared, stalls: stalls, flushes: flushes, opened: openName(),
		keyGroups: cfg.KeyGroups, maxPar: cfg.MaxParallelism, key: make([]byte, 0, 64), kgErr: errNoKeyGroup,
		fullAfter: cfg.FullSnapshotAfter, pool: make(chan []byte, poolChunks), release: cfg.Release}
	s.delta = newDelta(s.pool, s.maxPar)
	if cfg.KeyGroups.Len() == 1 {
		_ = s.SetKeyGroup(cfg.KeyGroups.Start)
	}
	if err := s.restore(cfg, plan); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("restore state: %w", err)
	}
	log.Debug().Stringer("key_groups", cfg.KeyGroups).Int("sources", len(plan.srcs)).
		Bool("rescaled", plan.rescaled()).Str("base", plan.base()).Msg("state opened")
	return s, nil
}

// Get returns a copy of the value stored under key in the current key group
// (see SetKeyGroup), which the caller owns. ok is false if the key has no
// value.
func (s *Store) Get(key []byte) (value []byte, ok bool, err error) {
	if s.db == nil {
		return nil, false, ErrClosed
	}
	if s.kgErr != nil {
		return nil, false, s.kgErr
	}
	if err := s.apply(); err != nil {
		return nil, false, err
	}
	v, closer, err := s.db.Get(s.pebbleKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get state key %q: %w", key, err)
	}
	value = append([]byte(nil), v...)
	if err := closer.Close(); err != nil {
		return nil, false, fmt.Errorf("get state key %q: %w", key, err)
	}
	return value, true, nil
}

// Set stores value under key in the current key group. Both are copied;
// the caller may reuse them as soon as Set returns. The write is not
// synced: it is durable only once a checkpoint includes it (its changelog,
// or a full snapshot).
func (s *Store) Set(key, value []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	if s.kgErr != nil {
		return s.kgErr
	}
	k := s.pebbleKey(key)
	if err := s.write(k, value, false); err != nil {
		return fmt.Errorf("set state key %q: %w", key, err)
	}
	if s.delta != nil {
		s.delta.set(s.kg, key, value)
		s.checkDeltaSize()
		s.feed()
	}
	return nil
}

// Delete removes key's value from the current key group; deleting a
// missing key is not an error. The caller may reuse key as soon as Delete
// returns.
func (s *Store) Delete(key []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	if s.kgErr != nil {
		return s.kgErr
	}
	k := s.pebbleKey(key)
	if err := s.write(k, nil, true); err != nil {
		return fmt.Errorf("delete state key %q: %w", key, err)
	}
	if s.delta != nil {
		s.delta.del(s.kg, key)
		s.checkDeltaSize()
		s.feed()
	}
	return nil
}

// Scan calls fn with every key in [start, end) of every key group of the
// Store (the transform's key, without its key group) and its value, both
// valid during the call, in key order; a key held in several key groups
// comes once for each. The same bounds rule as Expire's applies.
func (s *Store) Scan(start, end []byte, fn func(key, value []byte) error) error {
	if s.db == nil {
		return ErrClosed
	}
	if err := s.apply(); err != nil {
		return err
	}
	lo, hi := append([]byte{stateTag}, start...), append([]byte{stateTag}, end...)
	err := scanState(s.db, currentLayout, lo, hi, func(it *pebble.Iterator, _ int, key []byte) error {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		return fn(key, v)
	})
	if err != nil {
		return fmt.Errorf("scan state keys [%q, %q): %w", start, end, err)
	}
	return nil
}

// Close closes the database. Unsnapshotted writes are lost, by design; the
// working directory stays on disk until the next Open wipes it. Snapshot
// directories are not touched. Close after Close returns ErrClosed.
func (s *Store) Close() error {
	if s.db == nil {
		return ErrClosed
	}
	if s.bg != nil {
		if <-s.bg.done; s.bg.err == nil {
			s.release(s.bg.dir) // never named by a chain
		}
	}
	s.abortStream()
	s.stopReclaim()
	var err error
	if s.pend != nil { // pending writes are lost with the rest of the unsnapshotted ones
		err = s.pend.Close()
		s.pend = nil
	}
	err = errors.Join(err, s.db.Close())
	s.db = nil
	if err != nil {
		return fmt.Errorf("close state %s: %w", s.dir, err)
	}
	return nil
}

// openPebble is pebble.Open, with a Fatalf during it (pebbleLogger) as an
// error: on a full disk Pebble cannot write the MANIFEST of the database
// it creates and calls Fatalf, which made a job's start or restart a panic
// (exit 3, in a loop while the disk stays full) where it should fail the
// attempt and be retried. Nothing of the working copy is kept: the next
// Open starts it afresh. A Fatalf once the database is open still panics.
func openPebble(dir string, opts *pebble.Options) (db *pebble.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(pebbleFatal)
			if !ok {
				panic(p)
			}
			db, err = nil, f
		}
	}()
	return pebble.Open(dir, opts)
}
