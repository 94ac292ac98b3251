package store

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

func TestSaveThenLoadReturnsTheSameMetadata(t *testing.T) {
	mem := newMem(t)
	writeState(t, mem, "w/1.sst", "w/2.sst")
	s, _ := openStore(t, mem, 3)
	md := meta(7, "w/1.sst", "w/2.sst")
	must(t, s.Save(md))

	got, _, err := s.LoadLatest()
	must(t, err)
	if !reflect.DeepEqual(*got, md) {
		t.Fatalf("LoadLatest = %+v, want %+v", *got, md)
	}
	got, err = s.Load(7)
	must(t, err)
	if !reflect.DeepEqual(*got, md) {
		t.Fatalf("Load(7) = %+v, want %+v", *got, md)
	}
	if s.MaxID() != 7 {
		t.Fatalf("MaxID = %d, want 7", s.MaxID())
	}
	infos, err := s.List()
	must(t, err)
	want := Info{ID: 7, Timestamp: md.Timestamp, Files: 2, StateBytes: int64(2 * len("contents of w/1.sst"))}
	if len(infos) != 1 || infos[0].MetaBytes == 0 {
		t.Fatalf("List = %+v", infos)
	}
	infos[0].MetaBytes = 0
	if !reflect.DeepEqual(infos[0], want) {
		t.Fatalf("List = %+v, want %+v", infos[0], want)
	}
}

func TestLoadLatestWithNoCheckpointReturnsNil(t *testing.T) {
	s, _ := openStore(t, newMem(t), 1)
	md, _, err := s.LoadLatest()
	if md != nil || err != nil {
		t.Fatalf("LoadLatest = %v, %v; want nil, nil", md, err)
	}
	if s.MaxID() != 0 {
		t.Fatalf("MaxID = %d, want 0", s.MaxID())
	}
}

func TestLoadOfUnknownIDIsNotFound(t *testing.T) {
	s, _ := openStore(t, newMem(t), 1)
	if _, err := s.Load(3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load(3) error = %v, want ErrNotFound", err)
	}
}

func TestSaveKeepsTheLastRetainedAndDeletesOlderMetadata(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 2)
	for id := checkpoint.ID(1); id <= 5; id++ {
		must(t, s.Save(meta(id)))
	}
	if got := restorable(t, s); !slices.Equal(got, []checkpoint.ID{4, 5}) {
		t.Fatalf("retained %v, want [4 5]", got)
	}
	names, err := mem.List(testDir)
	must(t, err)
	slices.Sort(names)
	want := []string{"LOCK", metaName(4), metaName(5)}
	if !slices.Equal(names, want) {
		t.Fatalf("dir holds %v, want %v", names, want)
	}
}

func TestSharedFileSurvivesUntilItsLastCheckpointIsDropped(t *testing.T) {
	mem := newMem(t)
	writeState(t, mem, "w/3.sst", "shared/base.sst", "w/4.sst", "w/5.sst")
	s, _ := openStore(t, mem, 1)
	must(t, s.Save(meta(3, "w/3.sst", "shared/base.sst")))
	must(t, s.Save(meta(4, "shared/base.sst", "w/4.sst")))

	if stateExists(mem, "w/3.sst") {
		t.Fatal("w/3.sst, referenced only by dropped checkpoint 3, still exists")
	}
	if !stateExists(mem, "shared/base.sst") || !stateExists(mem, "w/4.sst") {
		t.Fatal("a file checkpoint 4 references was deleted with checkpoint 3")
	}

	must(t, s.Save(meta(5, "w/5.sst")))
	if stateExists(mem, "shared/base.sst") || stateExists(mem, "w/4.sst") {
		t.Fatal("files no retained checkpoint references survived dropping checkpoint 4")
	}
	if !stateExists(mem, "w/5.sst") {
		t.Fatal("w/5.sst of the retained checkpoint was deleted")
	}
}

// Discard deletes the files of a failed checkpoint that no checkpoint on
// disk references; a file a later completed checkpoint took over stays.
func TestDiscardKeepsFilesACompletedCheckpointReferences(t *testing.T) {
	mem := newMem(t)
	writeState(t, mem, "base/1.sst", "chk-2/w.changelog", "chk-2/full/2.sst", "chk-3/w.changelog")
	s, _ := openStore(t, mem, 2)
	must(t, s.Save(meta(1, "base/1.sst")))
	// Checkpoint 2 failed; 3 completed with 2's changelog in its chain.
	must(t, s.Save(meta(3, "base/1.sst", "chk-2/w.changelog", "chk-3/w.changelog")))
	must(t, s.Discard([]string{"base/1.sst", "chk-2/w.changelog", "chk-2/full/2.sst"}))
	if stateExists(mem, "chk-2/full/2.sst") {
		t.Fatal("chk-2/full/2.sst, which no checkpoint references, survived Discard")
	}
	for _, f := range []string{"base/1.sst", "chk-2/w.changelog", "chk-3/w.changelog"} {
		if !stateExists(mem, f) {
			t.Fatalf("Discard deleted %s, which checkpoint 3 references", f)
		}
	}
}

func TestStateFileReferencedByTwoTasksIsCountedOnce(t *testing.T) {
	mem := newMem(t)
	writeState(t, mem, "shared/base.sst")
	s, _ := openStore(t, mem, 1)
	md := meta(1, "shared/base.sst")
	md.Tasks["worker-2"] = checkpoint.Snapshot{Files: []string{"shared/base.sst"}}
	must(t, s.Save(md))
	infos, err := s.List()
	must(t, err)
	if infos[0].Files != 1 {
		t.Fatalf("Files = %d, want 1", infos[0].Files)
	}
}

func TestSaveRejectsAnIDNotAboveEveryIDOnDisk(t *testing.T) {
	s, _ := openStore(t, newMem(t), 2)
	must(t, s.Save(meta(5)))
	for _, id := range []checkpoint.ID{0, 4, 5} {
		if err := s.Save(meta(id)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Save(%d) error = %v, want ErrInvalid", id, err)
		}
	}
}

func TestSaveRejectsStatePathsOutsideTheStateRoot(t *testing.T) {
	s, _ := openStore(t, newMem(t), 2)
	for _, p := range []string{"", ".", "/etc/passwd", "..", "../x", "a/../../x", "a//b", "a/./b"} {
		if err := s.Save(meta(1, p)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Save with file %q: error = %v, want ErrInvalid", p, err)
		}
	}
	if s.MaxID() != 0 {
		t.Fatalf("a refused save moved MaxID to %d", s.MaxID())
	}
}

func TestOpenRemovesLeftoverTempFilesAndCountsTheirIDs(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 2)
	must(t, s.Save(meta(1)))
	must(t, s.Close())
	f, err := mem.Create(mem.PathJoin(testDir, tmpName(9)), vfs.WriteCategoryUnspecified)
	must(t, err)
	_, err = f.Write([]byte("half a checkpoint"))
	must(t, err)
	must(t, f.Close())
	must(t, mem.MkdirAll(mem.PathJoin(testDir, "unrelated"), 0o755))

	s, logs := openStore(t, mem, 2)
	if _, err := mem.Stat(mem.PathJoin(testDir, tmpName(9))); err == nil {
		t.Fatal("temp file survived Open")
	}
	if s.MaxID() != 9 {
		t.Fatalf("MaxID = %d, want 9 (the interrupted save's id)", s.MaxID())
	}
	if err := s.Save(meta(9)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Save(9) error = %v, want ErrInvalid", err)
	}
	if len(logLines(t, logs)) == 0 {
		t.Fatal("removing a temp file was not logged")
	}
}

func TestOpenOfALockedDirFails(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 1)
	if _, err := Open(mem, testDir, testState, 1, zerolog.Nop()); err == nil {
		t.Fatal("second Open of the same dir succeeded")
	}
	must(t, s.Close())
	must(t, s.Close()) // idempotent
	s2, err := Open(mem, testDir, testState, 1, zerolog.Nop())
	must(t, err)
	must(t, s2.Close())
}

func TestOpenRejectsRetainedBelowOne(t *testing.T) {
	if _, err := Open(newMem(t), testDir, testState, 0, zerolog.Nop()); err == nil {
		t.Fatal("Open with retained 0 succeeded")
	}
}

func TestStoreWorksOnTheOSFilesystem(t *testing.T) {
	root := t.TempDir()
	fs := vfs.Default
	dir, state := fs.PathJoin(root, "data", "checkpoints"), fs.PathJoin(root, "state")
	must(t, fs.MkdirAll(fs.PathJoin(state, "w"), 0o755))
	for _, n := range []string{"w/1.sst", "w/2.sst"} {
		f, err := fs.Create(fs.PathJoin(state, n), vfs.WriteCategoryUnspecified)
		must(t, err)
		must(t, f.Close())
	}
	s, err := Open(fs, dir, state, 1, zerolog.Nop())
	must(t, err)
	defer s.Close()
	must(t, s.Save(meta(1, "w/1.sst")))
	must(t, s.Save(meta(2, "w/2.sst")))
	got, _, err := s.LoadLatest()
	must(t, err)
	if got.ID != 2 {
		t.Fatalf("LoadLatest = %d, want 2", got.ID)
	}
	if _, err := fs.Stat(fs.PathJoin(state, "w/1.sst")); err == nil {
		t.Fatal("w/1.sst survived dropping checkpoint 1")
	}
}

func TestOnlyWellFormedNamesAreCheckpointFiles(t *testing.T) {
	cases := map[string]bool{
		metaName(1): true, tmpName(1): true, "chk-7.meta": false, "chk-+0000000000000000007.meta": false,
		"chk-.meta": false, "chk-x.meta": false, "chk-1.json": false, "LOCK": false,
		"chk-99999999999999999999999.meta": false,
	}
	for name, want := range cases {
		if _, _, ok := parseName(name); ok != want {
			t.Errorf("parseName(%q) ok = %v, want %v", name, ok, want)
		}
	}
}

func TestListAndLoadAreSafeDuringSaves(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := checkpoint.ID(1); id <= 50; id++ {
			if err := s.Save(meta(id)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			if got := restorable(t, s); !slices.Equal(got, []checkpoint.ID{49, 50}) {
				t.Fatalf("retained %v, want [49 50]", got)
			}
			return
		default:
			if _, err := s.List(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.LoadLatest(); err != nil {
				t.Fatal(err)
			}
			_ = s.MaxID()
		}
	}
}

// TestPersistLeavesRetentionToCollect: Persist makes a checkpoint durable
// without dropping older ones; Collect then applies retention as Save does.
func TestPersistLeavesRetentionToCollect(t *testing.T) {
	fs := newMem(t)
	writeState(t, fs, "w/1.sst", "w/2.sst")
	s, _ := openStore(t, fs, 1)
	must(t, s.Persist(meta(1, "w/1.sst")))
	must(t, s.Persist(meta(2, "w/2.sst")))
	if got := restorable(t, s); !slices.Equal(got, []checkpoint.ID{2, 1}) && !slices.Equal(got, []checkpoint.ID{1, 2}) {
		t.Fatalf("after two Persists: restorable %v, want both (no clean-up yet)", got)
	}
	if !stateExists(fs, "w/1.sst") {
		t.Fatal("Persist deleted w/1.sst")
	}
	s.Collect()
	if got := restorable(t, s); !slices.Equal(got, []checkpoint.ID{2}) {
		t.Fatalf("after Collect: restorable %v, want [2]", got)
	}
	if stateExists(fs, "w/1.sst") || !stateExists(fs, "w/2.sst") {
		t.Fatal("Collect must delete w/1.sst (dropped checkpoint 1) and keep w/2.sst")
	}
}
