package state

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/keygroup"
)

// solo is the key groups of every test's Store that is not about key
// groups: key group 0 alone, set from the start.
var solo = keygroup.Range{Start: 0, End: 1}

// whole restores c, written by a Store that owned solo.
func whole(c Chain) []Restore { return []Restore{{Chain: c, KeyGroups: solo}} }

// testLog writes warnings and errors to the test log.
func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// openT opens a Store of solo in root/work restored from the full snapshot
// restoreFrom (if not ""), and closes it when the test ends.
func openT(t testing.TB, root, restoreFrom string) *Store {
	t.Helper()
	s, err := Open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo, Restore: whole(Chain{Base: restoreFrom})}, testLog(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openCfg opens a Store with cfg, of solo if cfg.KeyGroups is empty, and
// closes it when the test ends.
func openCfg(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.KeyGroups.Empty() {
		cfg.KeyGroups = solo
	}
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

// contents reads every key and value in the store, keys without their key
// group. It fails the test on a key outside the store's key groups, or a
// key in two key groups.
func contents(t testing.TB, s *Store) map[string]string {
	t.Helper()
	m := make(map[string]string)
	for kg, kv := range grouped(t, s) {
		if !s.keyGroups.Contains(kg) {
			t.Fatalf("the store of %s holds keys of key group %d: %v", s.keyGroups, kg, kv)
		}
		for k, v := range kv {
			if _, dup := m[k]; dup {
				t.Fatalf("key %q is in two key groups", k)
			}
			m[k] = v
		}
	}
	return m
}

// grouped reads every key and value of the store by key group. It fails
// the test on a key that is neither a state key of the current layout nor
// one of the Store's own.
func grouped(t testing.TB, s *Store) map[int]map[string]string {
	t.Helper()
	if err := s.apply(); err != nil {
		t.Fatal(err)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{UpperBound: []byte{0xff}})
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	defer it.Close()
	m := make(map[int]map[string]string)
	for it.First(); it.Valid(); it.Next() {
		kg, key, ok := decodeKey(currentLayout, it.Key())
		if !ok {
			t.Fatalf("key %q has no key group", it.Key())
		}
		if m[kg] == nil {
			m[kg] = map[string]string{}
		}
		m[kg][string(key)] = string(it.Value())
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
	if err := s.apply(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}
