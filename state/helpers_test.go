package state

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// testLog writes warnings and errors to the test log.
func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// openT opens a Store in root/work restored from restoreFrom, and closes it
// when the test ends.
func openT(t testing.TB, root, restoreFrom string) *Store {
	t.Helper()
	s, err := Open(Config{Dir: filepath.Join(root, "work"), RestoreFrom: restoreFrom}, testLog(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openCfg opens a Store with cfg and closes it when the test ends.
func openCfg(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg, testLog(t))
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func set(t testing.TB, s *Store, k, v string) {
	t.Helper()
	if err := s.Set([]byte(k), []byte(v)); err != nil {
		t.Fatalf("Set(%q): %v", k, err)
	}
}

func del(t testing.TB, s *Store, k string) {
	t.Helper()
	if err := s.Delete([]byte(k)); err != nil {
		t.Fatalf("Delete(%q): %v", k, err)
	}
}

func snapshot(t testing.TB, s *Store, dir string) Handle {
	t.Helper()
	h, err := s.Snapshot(dir)
	if err != nil {
		t.Fatalf("Snapshot(%s): %v", dir, err)
	}
	return h
}

// contents reads every key and value in the store.
func contents(t testing.TB, s *Store) map[string]string {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	defer it.Close()
	m := make(map[string]string)
	for it.First(); it.Valid(); it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return m
}

func wantContents(t testing.TB, s *Store, want map[string]string) {
	t.Helper()
	if got := contents(t, s); !maps.Equal(got, want) {
		t.Fatalf("state = %v, want %v", got, want)
	}
}

// fileSizes lists a directory's files and their sizes.
func fileSizes(t testing.TB, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir: %v", err)
	}
	m := make(map[string]int64)
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatalf("stat: %v", err)
		}
		m[e.Name()] = fi.Size()
	}
	return m
}

// flush moves the memtable into an sstable, as a full memtable would; small
// tests need it to have sstables to share.
func flush(t testing.TB, s *Store) {
	t.Helper()
	if err := s.db.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}
