package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// ErrClosed is returned by every method of a Store after Close.
var ErrClosed = errors.New("state: store is closed")

// Config says where a Store keeps its working copy and what it starts from.
type Config struct {
	// Dir is the worker's working directory, for example
	// <state.dir>/work/worker-2. Open deletes everything in it.
	Dir string
	// RestoreFrom is a directory written by Snapshot, or "" to start with
	// empty state. It is only read, never modified, and must not lie inside
	// Dir.
	RestoreFrom string
	// FS is the filesystem for Dir, RestoreFrom and snapshot directories;
	// nil means vfs.Default.
	FS vfs.FS
}

// cacheSize is each Store's block cache: enough for the index, filter and
// hot data blocks of a few million small keys.
const cacheSize = 64 << 20

// Store is one worker's keyed state, backed by a Pebble database in
// Config.Dir.
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
}

// Open wipes cfg.Dir, restores cfg.RestoreFrom into it if set, and opens the
// state database there. See the package documentation for the lifecycle.
func Open(cfg Config, log zerolog.Logger) (*Store, error) {
	return open(cfg, log, true)
}

// open is Open with a choice of write-ahead log. The WAL is on, unsynced:
// a snapshot then syncs and copies the live WAL instead of flushing the
// memtable into a new sstable, which made the synchronous part 1.3-2x
// faster for about 10% slower writes (see bench_test.go, which measures
// both).
func open(cfg Config, log zerolog.Logger, wal bool) (*Store, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log = log.With().Str("component", "state").Str("dir", cfg.Dir).Logger()
	if err := cfg.FS.RemoveAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("wipe state dir %s: %w", cfg.Dir, err)
	}
	if err := cfg.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", cfg.Dir, err)
	}
	var shared map[string]struct{}
	if cfg.RestoreFrom != "" {
		var err error
		if shared, err = copyCheckpoint(cfg.FS, cfg.RestoreFrom, cfg.Dir); err != nil {
			return nil, fmt.Errorf("restore %s into %s: %w", cfg.RestoreFrom, cfg.Dir, err)
		}
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		FS:         cfg.FS,
		Logger:     pebbleLogger{log},
		DisableWAL: !wal,
		Cache:      cache,
	}
	// Keyed state is read by point lookups, most of them for keys not there
	// yet (dedup's first sighting of an id): a bloom filter answers those
	// without reading and decompressing a block.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", cfg.Dir, err)
	}
	log.Debug().Str("restored_from", cfg.RestoreFrom).Msg("state opened")
	return &Store{db: db, fs: cfg.FS, dir: cfg.Dir, log: log, wal: wal, shared: shared}, nil
}

func (c Config) validate() error {
	if c.Dir == "" {
		return errors.New("state: Config.Dir is empty")
	}
	if c.RestoreFrom == "" {
		return nil
	}
	dir, from := filepath.Clean(c.Dir), filepath.Clean(c.RestoreFrom)
	if from == dir || strings.HasPrefix(from, dir+string(filepath.Separator)) {
		return fmt.Errorf("state: RestoreFrom %s lies inside Dir %s, which Open wipes", c.RestoreFrom, c.Dir)
	}
	return nil
}

// Get returns a copy of the value stored under key, which the caller owns.
// ok is false if the key has no value.
func (s *Store) Get(key []byte) (value []byte, ok bool, err error) {
	if s.db == nil {
		return nil, false, ErrClosed
	}
	v, closer, err := s.db.Get(key)
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

// Set stores value under key. Both are copied; the caller may reuse them as
// soon as Set returns. The write is not synced: it is durable only once a
// Snapshot includes it.
func (s *Store) Set(key, value []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	if err := s.db.Set(key, value, pebble.NoSync); err != nil {
		return fmt.Errorf("set state key %q: %w", key, err)
	}
	return nil
}

// Delete removes key's value; deleting a missing key is not an error. The
// caller may reuse key as soon as Delete returns.
func (s *Store) Delete(key []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	if err := s.db.Delete(key, pebble.NoSync); err != nil {
		return fmt.Errorf("delete state key %q: %w", key, err)
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
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("close state %s: %w", s.dir, err)
	}
	return nil
}
