package store

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// TestReleasedStateGoesWithTheNextCollectUnlessACheckpointReferencesIt:
// what the state package releases is deleted by the store (the one owner),
// at the next Collect, and never a file a checkpoint on disk lists.
func TestReleasedStateGoesWithTheNextCollectUnlessACheckpointReferencesIt(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 3)
	writeState(t, mem, ChangelogPath(1, 0), ChangelogPath(2, 0), FullSnapshotPath(2, 1)+"/000001.sst")
	must(t, s.Persist(meta(1, ChangelogPath(1, 0))))
	s.Release(testState+"/"+ChangelogPath(1, 0), ChangelogPath(2, 0), testState+"/"+FullSnapshotPath(2, 1))
	if !stateExists(mem, ChangelogPath(2, 0)) {
		t.Fatal("Release deleted at once; Collect is the time")
	}
	s.Collect()
	if !stateExists(mem, ChangelogPath(1, 0)) {
		t.Error("a released file that checkpoint 1 references was deleted")
	}
	for _, gone := range []string{ChangelogPath(2, 0), FullSnapshotPath(2, 1)} {
		if stateExists(mem, gone) {
			t.Errorf("released %s is still there", gone)
		}
	}
	// chk-2 is empty but above the newest durable checkpoint (1): a worker
	// may still write there, so it stays.
	if !stateExists(mem, "chk-00000000000000000002") {
		t.Error("the empty directory of an in-flight checkpoint was removed")
	}
	must(t, s.Persist(meta(2, ChangelogPath(1, 0))))
	s.Collect()
	if stateExists(mem, "chk-00000000000000000002") {
		t.Error("the empty chk-2 stays after checkpoint 2 is durable")
	}
}

// TestCleanStateRootKeepsWhatAnyCheckpointOnDiskReferences: at start, files
// no checkpoint lists go; files a checkpoint lists stay even when that
// checkpoint misses others; and nothing goes while a checkpoint cannot be
// read (its files are unknown).
func TestCleanStateRootKeepsWhatAnyCheckpointOnDiskReferences(t *testing.T) {
	mem := newMem(t)
	kept, orphan := FullSnapshotPath(1, 0)+"/000001.sst", ChangelogPath(3, 0)
	s, _ := openStore(t, mem, 3)
	writeState(t, mem, kept, orphan, ChangelogPath(2, 1))
	// Checkpoint 1 lists a file that is missing: not restorable, but its
	// other file must survive (an operator may restore the missing one).
	must(t, s.Persist(meta(1, kept, "chk-00000000000000000001/worker-9.changelog")))
	must(t, s.Persist(meta(2, ChangelogPath(2, 1))))
	deleted, err := s.CleanStateRoot()
	must(t, err)
	if !slices.Equal(deleted, []string{orphan}) {
		t.Errorf("deleted %v, want only %s", deleted, orphan)
	}
	if !stateExists(mem, kept) || stateExists(mem, "chk-00000000000000000003") {
		t.Errorf("kept %v, chk-3 %v", stateExists(mem, kept), stateExists(mem, "chk-00000000000000000003"))
	}

	writeState(t, mem, orphan)
	damage(t, mem, 2, func(b []byte) []byte { return b[:len(b)-1] })
	deleted, err = s.CleanStateRoot()
	must(t, err)
	if len(deleted) != 0 || !stateExists(mem, orphan) {
		t.Errorf("deleted %v with checkpoint 2 unreadable; want nothing", deleted)
	}
}

// TestMaxIDCountsStateDirectories: a snapshot written for a checkpoint whose
// metadata never reached the disk still raises MaxID, so its id is never
// handed out again.
func TestMaxIDCountsStateDirectories(t *testing.T) {
	mem := newMem(t)
	writeState(t, mem, ChangelogPath(7, 0), FullSnapshotPath(9, 1)+"/MANIFEST-000001")
	s, _ := openStore(t, mem, 3)
	if got := s.MaxID(); got != 9 {
		t.Errorf("MaxID = %d, want 9", got)
	}
}

// TestStrayNamesNeverDecideIDs: a file the store never writes (an id above
// MaxID, or a name that only looks like a checkpoint's) is ignored: it
// neither raises MaxID (ids never wrap) nor blocks a save.
func TestStrayNamesNeverDecideIDs(t *testing.T) {
	mem := newMem(t)
	for _, name := range []string{"chk-18446744073709551614.meta.tmp", "chk-18446744073709551615.meta", "chk-9007199254740993.meta", "notes.txt"} {
		f, err := mem.Create(mem.PathJoin(testDir, name), vfs.WriteCategoryUnspecified)
		must(t, err)
		must(t, f.Close())
	}
	// And in the state root: directories named like checkpoints' above MaxID.
	writeState(t, mem, "chk-18446744073709551614/worker-0.changelog", "full/chk-09007199254740993-worker-0/MANIFEST-000001")
	s, logs := openStore(t, mem, 3)
	if s.MaxID() != 0 {
		t.Errorf("MaxID = %d, want 0", s.MaxID())
	}
	must(t, s.Save(meta(1)))
	if got, _, err := s.LoadLatest(); err != nil || got == nil || got.ID != 1 {
		t.Errorf("LoadLatest = %v, %v", got, err)
	}
	if n := strings.Count(logs.String(), "ignoring a file that is not a checkpoint"); n != 4 {
		t.Errorf("%d warnings for 4 foreign files:\n%s", n, logs)
	}
}

// TestASecondInstanceOnTheSameDirectoriesIsRefusedAtOnce: the checkpoint
// directory and the state root are locked; a second store says another
// instance holds them, without retrying.
func TestASecondInstanceOnTheSameDirectoriesIsRefusedAtOnce(t *testing.T) {
	mem := newMem(t)
	openStore(t, mem, 3)
	_, err := Open(mem, testDir, testState, 3, zerolog.Nop())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another instance of this job") {
		t.Fatalf("second Open: %v, want ErrLocked naming another instance", err)
	}
	_, err = Open(mem, "/other-ckpt", testState, 3, zerolog.Nop())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), testState) {
		t.Fatalf("Open on the same state root: %v, want ErrLocked naming %s", err, testState)
	}
}

// At start, the working directories of workers the job no longer has go,
// with what their streams left; the others, and names the store never
// writes, stay.
func TestRemoveWorkDirsFromRemovesOnlyWorkersAtOrAboveTheCount(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 1)
	if removed, err := s.RemoveWorkDirsFrom(0); err != nil || len(removed) != 0 {
		t.Fatalf("without a work directory: removed %v, %v", removed, err)
	}
	writeState(t, mem, "work/worker-0/000001.sst", "work/worker-0.changelog-x.1-1",
		"work/worker-1/000001.sst", "work/worker-1.changelog-x.1-3", "work/worker-2.rescale/MANIFEST",
		"work/worker-10/000001.sst", "work/worker-01/a", "work/worker-x/a", "work/notes.txt", ChangelogPath(1, 1))
	removed, err := s.RemoveWorkDirsFrom(1)
	must(t, err)
	want := []string{"work/worker-1", "work/worker-1.changelog-x.1-3", "work/worker-10", "work/worker-2.rescale"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, p := range want {
		if stateExists(mem, p) {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range []string{"work/worker-0/000001.sst", "work/worker-0.changelog-x.1-1", "work/worker-01/a", "work/worker-x/a", "work/notes.txt", ChangelogPath(1, 1)} {
		if !stateExists(mem, p) {
			t.Errorf("%s was removed", p)
		}
	}
	removed, err = s.RemoveWorkDirsFrom(0)
	must(t, err)
	if !slices.Equal(removed, []string{"work/worker-0", "work/worker-0.changelog-x.1-1"}) {
		t.Errorf("a job without keyed state removed %v, want worker 0's", removed)
	}
}
