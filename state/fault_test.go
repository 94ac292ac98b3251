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

	"github.com/connector-dev/connector/internal/keygroup"
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
			s, err := Open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo, FS: fs}, testLog(t))
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
	_, err := Open(Config{Dir: filepath.Join(root, "work2"), KeyGroups: solo, Restore: whole(Chain{Base: chk}), FS: fs}, testLog(t))
	if !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "restore "+chk) {
		t.Fatalf("Open from an unreadable checkpoint = %v, want the injected error with context", err)
	}
}

// A rescaled restore that cannot read a source fails with the source and
// key groups named, and leaves no scratch copy behind.
func TestRescaledRestoreFailsWhenASourceCannotBeRead(t *testing.T) {
	e, chains := twoWorkersCheckpointed(t, 9, 10)
	// Worker 1 of 3 owns [43,86): 22 key groups of worker 1 of 2, copied
	// into its working dir, and 21 of worker 0, read from a private copy.
	bad := chains[0].Base
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileRead && strings.HasPrefix(op.Path, bad) {
			return errorfs.ErrInjected
		}
		return nil
	}))
	dir := filepath.Join(e.root, "restore")
	_, err := Open(Config{Dir: dir, KeyGroups: keygroup.RangeOf(128, 3, 1), FS: fs, Restore: []Restore{
		{Chain: chains[0], KeyGroups: keygroup.RangeOf(128, 2, 0)}, {Chain: chains[1], KeyGroups: keygroup.RangeOf(128, 2, 1)},
	}}, testLog(t))
	if !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "copy key groups [43,64) from "+bad) {
		t.Fatalf("Open = %v, want the injected error naming the source and its key groups", err)
	}
	if _, err := os.Stat(dir + ".rescale"); !os.IsNotExist(err) {
		t.Fatalf("scratch dir left behind: %v", err)
	}
}
