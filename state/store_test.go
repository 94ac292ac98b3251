package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/keygroup"
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
	if _, ok, err := s.Get([]byte("b")); err != nil || ok {
		t.Fatalf("Get(b) of a deleted key = found %v, %v; want not found, no error", ok, err)
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
		{Config{Dir: work}, "Config.KeyGroups [] is not a non-empty range within [0,128)"},
		{Config{Dir: work, KeyGroups: keygroup.Range{Start: 120, End: 129}}, "Config.KeyGroups [120,129) is not a non-empty range within [0,128)"},
		{Config{Dir: work, KeyGroups: solo, MaxParallelism: 40000}, "Config.MaxParallelism: keygroup: max parallelism 40000 is not in 1..32768"},
		{Config{Dir: work, KeyGroups: solo, Restore: whole(Chain{Base: work})}, "lies inside " + work + ","},
		{Config{Dir: work, KeyGroups: solo, Restore: whole(Chain{Base: filepath.Join(work, "chk")})}, "lies inside " + work + ","},
		{Config{Dir: work, KeyGroups: solo, Restore: whole(Chain{Changelogs: []string{filepath.Join(work+".rescale", "1")}})}, "lies inside " + work + ".rescale,"},
		{Config{Dir: work, KeyGroups: solo, Restore: []Restore{{}}}, "Config.Restore[0].KeyGroups [] is not a non-empty range"},
		{Config{Dir: work, KeyGroups: solo, Restore: []Restore{{KeyGroups: keygroup.Range{Start: 0, End: 10}}, {KeyGroups: keygroup.Range{Start: 5, End: 20}}}},
			"Config.Restore[1].KeyGroups [5,20) overlaps Config.Restore[0].KeyGroups [0,10)"},
		{Config{Dir: work, KeyGroups: solo, Restore: whole(Chain{Base: filepath.Join(root, "missing")})}, "list checkpoint"},
	} {
		_, err := Open(tc.cfg, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// Validation reports every problem at once.
func TestOpenNamesEveryConfigProblem(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxParallelism: -1, Restore: []Restore{{KeyGroups: keygroup.Range{Start: 3, End: 1}}}}
	_, err := Open(cfg, zerolog.Nop())
	for _, want := range []string{"Config.MaxParallelism", "Config.KeyGroups", "Config.Restore[0].KeyGroups"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%+v) = %v, want an error naming %s", cfg, err, want)
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
		_, err := Open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo, Restore: whole(Chain{Base: from})}, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("restore from %s = %v, want error containing %q", from, err, want)
		}
	}
}
