package store

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// failing injects err into every operation match accepts while armed.
type failing struct {
	armed atomic.Bool
	match func(errorfs.Op) bool
	err   error
}

func (f *failing) String() string { return "failing" }

func (f *failing) MaybeError(op errorfs.Op) error {
	if f.armed.Load() && f.match(op) {
		return f.err
	}
	return nil
}

func enospc(path string) error {
	return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
}

func isTemp(op errorfs.Op) bool { return strings.HasSuffix(op.Path, tmpSuffix) }

func TestFailedSaveKeepsThePreviousCheckpointAndTheNextSaveSucceeds(t *testing.T) {
	cases := []struct {
		name  string
		match func(errorfs.Op) bool
		err   error
	}{
		{"create temp file ENOSPC", func(op errorfs.Op) bool { return op.Kind == errorfs.OpCreate }, enospc("tmp")},
		{"write ENOSPC", func(op errorfs.Op) bool { return op.Kind == errorfs.OpFileWrite && isTemp(op) }, enospc("tmp")},
		{"fsync temp file", func(op errorfs.Op) bool { return op.Kind == errorfs.OpFileSync && isTemp(op) }, errorfs.ErrInjected},
		{"rename", func(op errorfs.Op) bool { return op.Kind == errorfs.OpRename }, errorfs.ErrInjected},
		{"open dir for fsync", func(op errorfs.Op) bool { return op.Kind == errorfs.OpOpenDir && op.Path == testDir }, errorfs.ErrInjected},
		{"fsync dir", func(op errorfs.Op) bool { return op.Kind == errorfs.OpFileSync && op.Path == testDir }, errorfs.ErrInjected},
		{"rename and the clean-up after it", func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpRename || op.Kind == errorfs.OpRemove
		}, errorfs.ErrInjected},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(t)
			writeState(t, mem, "w/1.sst", "w/2.sst", "w/3.sst")
			inj := &failing{match: c.match, err: c.err}
			s, logs := openStore(t, errorfs.Wrap(mem, inj), 1)
			must(t, s.Save(meta(1, "w/1.sst")))

			inj.armed.Store(true)
			err := s.Save(meta(2, "w/2.sst"))
			inj.armed.Store(false)
			if !errors.Is(err, ErrNotDurable) || !errors.Is(err, c.err) {
				t.Fatalf("Save error = %v, want ErrNotDurable wrapping %v", err, c.err)
			}
			got, _, err := s.LoadLatest()
			must(t, err)
			if want := meta(1, "w/1.sst"); !reflect.DeepEqual(got, &want) {
				t.Fatalf("LoadLatest after failed save = %+v, want checkpoint 1", got)
			}
			if s.MaxID() != 2 {
				t.Fatalf("MaxID = %d, want 2: the failed id is used up", s.MaxID())
			}
			names, err := mem.List(testDir)
			must(t, err)
			if slices.Contains(names, tmpName(2)) && !strings.Contains(logs.String(), "could not remove") {
				t.Fatalf("temp file left without a warning: %v", names)
			}

			must(t, s.Save(meta(3, "w/3.sst")))
			got, _, err = s.LoadLatest()
			must(t, err)
			if got.ID != 3 || !stateExists(mem, "w/3.sst") || stateExists(mem, "w/1.sst") {
				t.Fatalf("after the next save: latest %d, w/3 %v, w/1 %v; want 3, true, false",
					got.ID, stateExists(mem, "w/3.sst"), stateExists(mem, "w/1.sst"))
			}
		})
	}
}

func TestCleanUpFailureDoesNotFailTheSaveAndIsRetried(t *testing.T) {
	cases := map[string]func(errorfs.Op) bool{
		"remove state file": func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpRemove && op.Path == "/state/w/1.sst"
		},
		"fsync state dir": func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileSync && op.Path == "/state/w"
		},
		"remove metadata": func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpRemove && strings.HasPrefix(op.Path, testDir)
		},
		"list metadata dir": func(op errorfs.Op) bool { return op.Kind == errorfs.OpList },
		"read old metadata": func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileRead && op.Path == "/ckpt/"+metaName(1)
		},
	}
	for name, match := range cases {
		t.Run(name, func(t *testing.T) {
			mem := newMem(t)
			writeState(t, mem, "w/1.sst", "w/2.sst", "w/3.sst")
			inj := &failing{match: match, err: errorfs.ErrInjected}
			s, logs := openStore(t, errorfs.Wrap(mem, inj), 1)
			must(t, s.Save(meta(1, "w/1.sst")))

			inj.armed.Store(true)
			must(t, s.Save(meta(2, "w/2.sst")))
			inj.armed.Store(false)
			if !strings.Contains(logs.String(), "clean-up incomplete") {
				t.Fatalf("clean-up failure not logged: %s", logs)
			}
			got, _, err := s.LoadLatest()
			must(t, err)
			if got.ID != 2 {
				t.Fatalf("LoadLatest = %d, want 2", got.ID)
			}

			must(t, s.Save(meta(3, "w/3.sst")))
			names, err := mem.List(testDir)
			must(t, err)
			slices.Sort(names)
			if want := []string{"LOCK", metaName(3)}; !slices.Equal(names, want) {
				t.Fatalf("dir holds %v, want %v", names, want)
			}
			if stateExists(mem, "w/1.sst") || stateExists(mem, "w/2.sst") {
				t.Fatal("the retried clean-up left state files of dropped checkpoints")
			}
		})
	}
}

func TestCorruptMetadataInsideTheRetainedWindowDoesNotCountTowardsR(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 2)
	must(t, s.Save(meta(1)))
	must(t, s.Save(meta(2)))
	damage(t, mem, 2, func(b []byte) []byte { return b[:len(b)-1] })
	must(t, s.Save(meta(3)))
	if got := restorable(t, s); !slices.Equal(got, []checkpoint.ID{1, 3}) {
		t.Fatalf("restorable %v, want [1 3]", got)
	}
	must(t, s.Save(meta(4)))
	names, err := mem.List(testDir)
	must(t, err)
	slices.Sort(names)
	if want := []string{"LOCK", metaName(3), metaName(4)}; !slices.Equal(names, want) {
		t.Fatalf("dir holds %v, want %v: corrupt 2 is older than R verified ones", names, want)
	}
}

func TestOpenFailsWhenTheDirectoryCannotBeCreated(t *testing.T) {
	mem := newMem(t)
	f, err := mem.Create("/file", vfs.WriteCategoryUnspecified)
	must(t, err)
	must(t, f.Close())
	if _, err := Open(mem, "/file/ckpt", testState, 1, zerolog.Nop()); err == nil {
		t.Fatal("Open under a regular file succeeded")
	}
}
