package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestSetGetDeleteRoundTrip(t *testing.T) {
	s := openT(t, t.TempDir(), "")
	if _, ok, err := s.Get([]byte("a")); ok || err != nil {
		t.Fatalf("Get on empty state: ok=%v err=%v, want missing", ok, err)
	}
	set(t, s, "a", "1")
	set(t, s, "b", "2")
	set(t, s, "a", "3")
	del(t, s, "b")
	del(t, s, "never-set")
	v, ok, err := s.Get([]byte("a"))
	if err != nil || !ok || string(v) != "3" {
		t.Fatalf("Get(a) = %q, %v, %v; want 3", v, ok, err)
	}
	if _, ok, _ := s.Get([]byte("b")); ok {
		t.Fatal("Get(b) found a deleted key")
	}
}

func TestGetValueAndSetArgumentsAreCopies(t *testing.T) {
	s := openT(t, t.TempDir(), "")
	key, val := []byte("key"), []byte("value")
	if err := s.Set(key, val); err != nil {
		t.Fatal(err)
	}
	copy(key, "xxx")
	copy(val, "XXXXX")
	v, ok, err := s.Get([]byte("key"))
	if err != nil || !ok || string(v) != "value" {
		t.Fatalf("Get after reusing Set's buffers = %q, %v, %v", v, ok, err)
	}
	// Later writes, flushes and compactions must not change a returned value.
	for i := range 1000 {
		set(t, s, "key", strings.Repeat("z", i%50))
	}
	snapshot(t, s, filepath.Join(t.TempDir(), "chk"))
	if !bytes.Equal(v, []byte("value")) {
		t.Fatalf("value returned by Get changed to %q", v)
	}
}

func TestOpenWipesTheWorkingDir(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "stale"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openT(t, root, "")
	set(t, s, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, root, "")
	wantContents(t, s, map[string]string{})
	if _, err := os.Stat(filepath.Join(work, "stale")); !os.IsNotExist(err) {
		t.Fatalf("stale file survived Open: %v", err)
	}
}

func TestClosedStoreReturnsErrClosed(t *testing.T) {
	s := openT(t, t.TempDir(), "")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{
		"Close":  s.Close(),
		"Set":    s.Set([]byte("k"), nil),
		"Delete": s.Delete([]byte("k")),
	}
	_, _, checks["Get"] = s.Get([]byte("k"))
	_, checks["Snapshot"] = s.Snapshot(filepath.Join(t.TempDir(), "chk"))
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Config.Dir is empty"},
		{Config{Dir: work, RestoreFrom: work}, "lies inside Dir"},
		{Config{Dir: work, RestoreFrom: filepath.Join(work, "chk")}, "lies inside Dir"},
		{Config{Dir: work, RestoreFrom: filepath.Join(root, "missing")}, "list checkpoint"},
	} {
		_, err := Open(tc.cfg, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestOpenRejectsEmptyOrNestedCheckpoint(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	nested := filepath.Join(root, "nested")
	for _, d := range []string{empty, filepath.Join(nested, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for from, want := range map[string]string{empty: "is empty", nested: "unexpected directory"} {
		_, err := Open(Config{Dir: filepath.Join(root, "work"), RestoreFrom: from}, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("restore from %s = %v, want error containing %q", from, err, want)
		}
	}
}
