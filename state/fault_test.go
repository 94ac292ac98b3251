package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// A snapshot whose directory cannot be written fails with the I/O error,
// leaves no partial directory behind, and the store keeps every write: a
// later snapshot elsewhere holds all of them.
func TestFailedSnapshotReturnsErrorAndStoreStaysUsable(t *testing.T) {
	for name, kind := range map[string]errorfs.OpKind{
		"stat": errorfs.OpStat, "mkdir": errorfs.OpMkdirAll, "opendir": errorfs.OpOpenDir,
		"create": errorfs.OpCreate, "write": errorfs.OpFileWrite, "sync": errorfs.OpFileSync,
		"list": errorfs.OpList,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			bad := filepath.Join(root, "bad")
			fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind == kind && strings.HasPrefix(op.Path, bad) {
					return errorfs.ErrInjected
				}
				return nil
			}))
			s, err := Open(Config{Dir: filepath.Join(root, "work"), FS: fs}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := map[string]string{}
			for i := range 300 {
				k := fmt.Sprintf("k%03d", i)
				set(t, s, k, "before")
				want[k] = "before"
			}

			dir := filepath.Join(bad, "1", "worker-0")
			_, err = s.Snapshot(dir)
			if !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "snapshot to "+dir) {
				t.Fatalf("Snapshot on a failing dir = %v, want the injected error with context", err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("failed snapshot left %s behind: %v", dir, err)
			}

			set(t, s, "after", "1")
			want["after"] = "1"
			h := snapshot(t, s, filepath.Join(root, "good"))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			wantContents(t, openT(t, filepath.Join(root, "restore"), h.Dir), want)
		})
	}
}

func TestRestoreFailsWhenCheckpointCannotBeRead(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	set(t, s, "k", "v")
	chk := snapshot(t, s, filepath.Join(root, "chk")).Dir
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileRead && strings.HasPrefix(op.Path, chk) {
			return errorfs.ErrInjected
		}
		return nil
	}))
	_, err := Open(Config{Dir: filepath.Join(root, "work2"), RestoreFrom: chk, FS: fs}, testLog(t))
	if !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "restore "+chk) {
		t.Fatalf("Open from an unreadable checkpoint = %v, want the injected error with context", err)
	}
}
