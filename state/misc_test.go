package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
)

// Across filesystems Pebble copies sstables instead of linking them; the
// snapshot is still complete, and the handle does not claim sharing.
func TestSnapshotOnAnotherFilesystemCopiesAndSharesNothing(t *testing.T) {
	root := t.TempDir()
	other := otherFilesystem(t, root)
	s := openT(t, root, "")
	set(t, s, "k", "v")
	snapshot(t, s, filepath.Join(other, "1"))
	set(t, s, "k2", "v")
	h := snapshot(t, s, filepath.Join(other, "2"))
	if h.SharedFiles != 0 {
		t.Fatalf("snapshot on another filesystem claims %d shared files", h.SharedFiles)
	}
	wantContents(t, openT(t, filepath.Join(root, "r"), h.Dir), map[string]string{"k": "v", "k2": "v"})
}

// otherFilesystem returns a new directory on another filesystem than root's
// (under /dev/shm, tmpfs on Linux), removed at the test's end; a machine
// without one fails the test rather than skipping it.
func otherFilesystem(t *testing.T, root string) string {
	t.Helper()
	other, err := os.MkdirTemp("/dev/shm", "state-test-")
	if err != nil {
		t.Fatalf("this test needs a second filesystem at /dev/shm: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(other) })
	if a, b := devOf(t, root), devOf(t, other); a == b {
		t.Fatalf("this test needs /dev/shm on another filesystem than %s; both are on one device", root)
	}
	return other
}

func devOf(t *testing.T, dir string) vfs.DeviceID {
	fi, err := vfs.Default.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fi.DeviceID()
}

// A full snapshot taken with the write-ahead log on, as every snapshot was
// before changelogs, holds its last writes in a copy of the WAL: a Store
// (WAL off) restores them, and its chain goes on from there.
func TestSnapshotWithWALFromAnEarlierVersionRestores(t *testing.T) {
	root := t.TempDir()
	s, err := open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo}, testLog(t), true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set(t, s, "k", "v")
	h := snapshot(t, s, filepath.Join(root, "chk"))
	if !slices.ContainsFunc(h.Files, func(f string) bool { return strings.HasSuffix(f, ".log") }) {
		t.Fatalf("snapshot files %v hold no WAL: the test proves nothing", h.Files)
	}
	r := openT(t, filepath.Join(root, "r"), h.Dir)
	wantContents(t, r, map[string]string{"k": "v"})
	set(t, r, "k2", "v2")
	c := checkpointT(t, r, root, 1)
	wantContents(t, openChain(t, root, c), map[string]string{"k": "v", "k2": "v2"})
}

func TestPebbleLoggerRoutesToZerolog(t *testing.T) {
	var buf bytes.Buffer
	l := newPebbleLogger(zerolog.New(&buf))
	l.Infof("info %d", 1)
	l.Errorf("trouble %d", 2)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "broken 3") {
			t.Fatalf("Fatalf did not panic with its message: %v", r)
		}
		for _, want := range []string{`"level":"debug"`, "info 1", `"level":"error"`, "trouble 2", "broken 3"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("log %q lacks %q", buf.String(), want)
			}
		}
	}()
	l.Fatalf("broken %d", 3)
}

// A burst of Pebble errors (a flush retried on a full disk) is cut down to
// errorBurst lines. The sampler's clock stands still meanwhile: on the real
// clock a burst that took longer than the sampler's second (a loaded
// machine) would rightly get more lines.
func TestPebbleErrorsAreRateLimited(t *testing.T) {
	now := time.Now()
	prev := zerolog.TimestampFunc
	zerolog.TimestampFunc = func() time.Time { return now }
	t.Cleanup(func() { zerolog.TimestampFunc = prev })
	var buf bytes.Buffer
	l := newPebbleLogger(zerolog.New(&buf))
	for i := range 1000 {
		l.Errorf("background error: creating object %d: no space left on device", i)
	}
	if n := strings.Count(buf.String(), "\n"); n < 1 || n > errorBurst {
		t.Fatalf("%d lines logged for 1000 errors in a burst, want 1-%d", n, errorBurst)
	}
}

// A changelog streamed into a file beside the working directory is renamed
// into the checkpoint; with the checkpoints on another filesystem the
// rename cannot work, and the file is copied instead. Every checkpoint
// completes, as a changelog (not a full snapshot after every failed one),
// and restores.
func TestStreamedChangelogsIntoAnotherFilesystemAreCopied(t *testing.T) {
	root := t.TempDir()
	checkStreamedChangelogsCopied(t, root, Config{Dir: filepath.Join(root, "work")}, otherFilesystem(t, root))
}

// The same where the rename fails with EXDEV on one device: Linux refuses
// a rename between two mounts of one filesystem (two container volumes on
// a node's disk), whose device IDs are the same.
func TestStreamedChangelogsIntoAnotherMountAreCopied(t *testing.T) {
	root := t.TempDir()
	fs := &exdevFS{FS: vfs.Default}
	checkStreamedChangelogsCopied(t, root, Config{Dir: filepath.Join(root, "work"), FS: fs}, filepath.Join(root, "checkpoints"))
	if fs.refused.Load() != 4 {
		t.Errorf("%d renames into the checkpoints refused, want the 4 changelogs'", fs.refused.Load())
	}
}

// exdevFS refuses the rename of a file to a changelog's name (*.changelog)
// with EXDEV, as Linux does between two mounts.
type exdevFS struct {
	vfs.FS
	refused atomic.Int32
}

func (f *exdevFS) Rename(from, to string) error {
	if strings.HasSuffix(to, ".changelog") {
		f.refused.Add(1)
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EXDEV}
	}
	return f.FS.Rename(from, to)
}

// checkStreamedChangelogsCopied writes four barriers' worth of streamed
// changelogs (cfg's Store, checkpoints under ckpts) and checks that each
// one completed as a changelog, that no stream's file is left, and that
// the last chain restores (under root) every write.
func checkStreamedChangelogsCopied(t *testing.T, root string, cfg Config, ckpts string) {
	t.Helper()
	defer func(n int) { deltaChunk = n }(deltaChunk)
	deltaChunk = 256
	s := openCfg(t, cfg)
	want := map[string]string{}
	var c Chain
	for n := 1; n <= 4; n++ {
		for i := range 100 {
			k, v := fmt.Sprintf("k%d-%03d", n, i), strings.Repeat("v", 20)
			set(t, s, k, v)
			want[k] = v
		}
		c = checkpointT(t, s, ckpts, n)
	}
	if len(c.Changelogs) != 4 || s.streams != 4 {
		t.Errorf("the last chain has %d changelogs, %d streams ran; want 4 streamed changelogs (on the empty base)", len(c.Changelogs), s.streams)
	}
	if left := streamFiles(t, s.fs, s.dir); len(left) > 0 {
		t.Errorf("stream files left: %v", left)
	}
	wantContents(t, openChain(t, root, c), want)
}
