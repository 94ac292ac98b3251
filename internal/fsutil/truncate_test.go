package fsutil

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestTruncateCutsAFileBackInPlaceOrByCopy: the OS filesystem (a file
// descriptor: ftruncate) and the memory one (no descriptor: a copy renamed
// over it) keep exactly the first size bytes, and a file shorter than size
// is refused.
func TestTruncateCutsAFileBackInPlaceOrByCopy(t *testing.T) {
	for name, fs := range map[string]vfs.FS{"os": vfs.Default, "mem": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := "/t"
			if name == "os" {
				dir = t.TempDir()
			}
			if err := fs.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "f")
			f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("0123456789")); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			if err := Truncate(fs, path, 4); err != nil {
				t.Fatalf("Truncate: %v", err)
			}
			if got := read(t, fs, path); got != "0123" {
				t.Fatalf("after Truncate(4): %q", got)
			}
			if err := Truncate(fs, path, 4); err != nil || read(t, fs, path) != "0123" {
				t.Fatalf("Truncate to its own size: %v", err)
			}
			if err := Truncate(fs, path, 5); err == nil || !strings.Contains(err.Error(), "fewer than") {
				t.Fatalf("Truncate past the end = %v, want an error", err)
			}
		})
	}
}

func read(t *testing.T, fs vfs.FS, path string) string {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		t.Fatal(err)
	}
	return string(b)
}
