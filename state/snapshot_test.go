package state

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func TestRestoreSeesExactlyTheSnapshotState(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	want := map[string]string{}
	for i := range 500 {
		k, v := fmt.Sprintf("key-%04d", i), fmt.Sprintf("v%d", i)
		set(t, s, k, v)
		want[k] = v
	}
	del(t, s, "key-0007")
	delete(want, "key-0007")
	chk := filepath.Join(root, "checkpoints", "1", "worker-0")
	h := snapshot(t, s, chk)

	// Writes after the snapshot: overwrite, delete, add.
	set(t, s, "key-0001", "changed")
	del(t, s, "key-0002")
	set(t, s, "after", "x")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r := openT(t, root, h.Dir)
	wantContents(t, r, want)
}

func TestHandleDescribesTheSnapshot(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	set(t, s, "k", "v")
	dir := filepath.Join(root, "chk")
	h := snapshot(t, s, dir)
	sizes := fileSizes(t, dir)
	var total int64
	for _, n := range sizes {
		total += n
	}
	if h.Dir != dir || !slices.Equal(h.Files, slices.Sorted(maps.Keys(sizes))) || h.Bytes != total {
		t.Fatalf("handle = %+v, want dir %s, files %v, %d bytes", h, dir, sizes, total)
	}
	if h.Duration <= 0 || h.SharedFiles != 0 {
		t.Fatalf("first snapshot: duration %v, shared %d; want >0 and 0", h.Duration, h.SharedFiles)
	}
}

func TestConsecutiveSnapshotsShareSSTFilesByHardLink(t *testing.T) {
	// A compaction between the two snapshots would rewrite the shared
	// sstables (and the claim would hold vacuously); keep them as flushed.
	testPebbleOptions = func(o *pebble.Options) { o.DisableAutomaticCompactions = true }
	t.Cleanup(func() { testPebbleOptions = nil })
	root := t.TempDir()
	s := openT(t, root, "")
	for i := range 1000 {
		set(t, s, fmt.Sprintf("a-%04d", i), "1")
	}
	flush(t, s)
	a := snapshot(t, s, filepath.Join(root, "chk-1"))
	set(t, s, "b", "2")
	flush(t, s)
	b := snapshot(t, s, filepath.Join(root, "chk-2"))

	var linked int
	for _, name := range a.Files {
		if !immutable(name) || !slices.Contains(b.Files, name) {
			continue
		}
		fa, errA := os.Stat(filepath.Join(a.Dir, name))
		fb, errB := os.Stat(filepath.Join(b.Dir, name))
		if errA != nil || errB != nil {
			t.Fatalf("stat %s: %v, %v", name, errA, errB)
		}
		if !os.SameFile(fa, fb) {
			t.Fatalf("%s was copied into the second snapshot, not hard-linked", name)
		}
		linked++
	}
	if linked == 0 || b.SharedFiles != linked {
		t.Fatalf("%d sstables hard-linked, handle says %d shared; want the same, > 0", linked, b.SharedFiles)
	}
}

func TestRestoreTwiceLeavesTheCheckpointUnchanged(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	for i := range 200 {
		set(t, s, fmt.Sprintf("k%03d", i), "v")
	}
	chk := snapshot(t, s, filepath.Join(root, "chk")).Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileSizes(t, chk)

	for round := range 2 {
		r := openT(t, root, chk)
		if got := len(contents(t, r)); got != 200 {
			t.Fatalf("round %d: restored %d keys, want 200", round, got)
		}
		// Write enough to flush and compact in the working copy.
		for i := range 5000 {
			set(t, r, fmt.Sprintf("k%03d", i%300), fmt.Sprintf("round-%d-%d", round, i))
		}
		snapshot(t, r, filepath.Join(root, fmt.Sprintf("other-%d", round)))
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if after := fileSizes(t, chk); !maps.Equal(before, after) {
			t.Fatalf("round %d: checkpoint dir changed from %v to %v", round, before, after)
		}
	}
	r := openT(t, root, chk)
	if got := len(contents(t, r)); got != 200 {
		t.Fatalf("third restore: %d keys, want 200", got)
	}
}

// After restoring an older checkpoint A, Pebble numbers new files from A's
// MANIFEST, so files of the new lineage reuse numbers that a later
// checkpoint of the abandoned lineage gave to other data. Every checkpoint
// has its own directory, so the two never meet, and B restores as B.
func TestRestoreFromCheckpointWrittenAfterRestoringAnOlderOne(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	set(t, s, "gen", "A")
	set(t, s, "onlyA", "1")
	flush(t, s)
	a := snapshot(t, s, filepath.Join(root, "chk-A"))
	// The abandoned lineage: several flushes, so its files take the numbers
	// the restored lineage will use next.
	var lost Handle
	lostNums := map[string]bool{} // file numbers the abandoned lineage used
	for i := range 8 {
		set(t, s, "gen", "lost")
		set(t, s, fmt.Sprintf("lost-%d", i), "1")
		flush(t, s)
		lost = snapshot(t, s, filepath.Join(root, fmt.Sprintf("chk-lost-%d", i)))
		for _, name := range lost.Files {
			lostNums[fileNum(name)] = true
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r := openT(t, root, a.Dir)
	set(t, r, "gen", "B")
	del(t, r, "onlyA")
	flush(t, r)
	b := snapshot(t, r, filepath.Join(root, "chk-B"))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var reused []string
	for _, name := range b.Files {
		if immutable(name) && lostNums[fileNum(name)] && !slices.Contains(a.Files, name) {
			reused = append(reused, name)
		}
	}
	if len(reused) == 0 {
		t.Fatalf("B (%v) reuses no file number of the abandoned lineage: the test no longer covers the hazard", b.Files)
	}
	t.Logf("B's sstables %v carry numbers the abandoned lineage used", reused)

	wantContents(t, openT(t, root, b.Dir), map[string]string{"gen": "B"})
	wantLost := map[string]string{"gen": "lost", "onlyA": "1"}
	for i := range 8 {
		wantLost[fmt.Sprintf("lost-%d", i)] = "1"
	}
	wantContents(t, openT(t, filepath.Join(root, "x"), lost.Dir), wantLost)
}

func TestFirstSnapshotAfterRestoreSharesTheRestoredFiles(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	for i := range 1000 {
		set(t, s, fmt.Sprintf("k%04d", i), "v")
	}
	flush(t, s)
	a := snapshot(t, s, filepath.Join(root, "chk-A"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := openT(t, root, a.Dir)
	set(t, r, "new", "v")
	b := snapshot(t, r, filepath.Join(root, "chk-B"))
	if b.SharedFiles == 0 {
		t.Fatalf("first snapshot after restore shares nothing: %+v", b)
	}
	for _, name := range a.Files {
		if !immutable(name) {
			continue
		}
		fa, _ := os.Stat(filepath.Join(a.Dir, name))
		fb, err := os.Stat(filepath.Join(b.Dir, name))
		if err == nil && !os.SameFile(fa, fb) {
			t.Fatalf("%s copied, not linked, through the restore", name)
		}
	}
}

// fileNum is the number in a Pebble file name such as 000012.sst.
func fileNum(name string) string {
	num, _, _ := strings.Cut(name, ".")
	return num
}
