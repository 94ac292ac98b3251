package file

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// faults injects one kind of error into matching operations while on.
type faults struct {
	on   atomic.Bool
	kind map[errorfs.OpKind]bool
	path string // substring of the operation's path
	only string // if set, the operation's whole path
	err  error
}

func (f *faults) MaybeError(op errorfs.Op) error {
	if f.on.Load() && f.kind[op.Kind] && strings.Contains(op.Path, f.path) && (f.only == "" || op.Path == f.only) {
		return f.err
	}
	return nil
}

func (f *faults) String() string { return "faults" }

func faultyFile(t *testing.T, f *faults, mod func(*Config)) (*File, vfs.FS) {
	mem := vfs.NewMem()
	return newTestFile(t, errorfs.Wrap(mem, f), mod), mem
}

// declineThenRecover runs the scenario every fault test shares: the fault
// declines PreCommit(1) with an error of class ErrNotDurable wrapping want;
// with the fault gone, PreCommit(2) carries everything and one commit makes
// every record visible exactly once.
func declineThenRecover(t *testing.T, f *faults, want error, mod func(*Config)) {
	t.Helper()
	mem := vfs.NewMem()
	declineThenRecoverOn(t, mem, newTestFile(t, errorfs.Wrap(mem, f), mod), &f.on, want, 500)
}

// declineThenRecoverOn writes n records in each of four phases: healthy,
// failing up to PreCommit(1), failing after it, healthy again.
func declineThenRecoverOn(t *testing.T, mem vfs.FS, s *File, on *atomic.Bool, want error, n int) {
	t.Helper()
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, n)
	on.Store(true)
	writeRange(t, w, n, 2*n) // Write does not fail on I/O errors
	_, err := w.PreCommit(ctx, 1)
	if !errors.Is(err, sink.ErrNotDurable) || !errors.Is(err, want) {
		t.Fatalf("PreCommit(1) = %v, want ErrNotDurable wrapping %v", err, want)
	}
	if visible, _ := listDir(t, mem); len(visible) != 0 {
		t.Fatalf("visible after a declined pre-commit: %v", visible)
	}
	writeRange(t, w, 2*n, 3*n) // still failing: stays buffered
	on.Store(false)
	writeRange(t, w, 3*n, 4*n)
	cs := preCommit(t, w, 2)
	commit(t, s, cs)
	assertExactlyOnce(t, mem, ids(0, 4*n))
}

// TestAFailedFsyncLosesTheOutputInFlightAndTheRestartWritesItOnce: a
// file's fsync fails at pre-commit 2. After a write-back error Linux marks
// the pages clean, so a later fsync that succeeds says nothing of the
// bytes before it: the pre-commit (sync, or async's finish) fails with
// sink.ErrLost, and fails again if asked again, rather than carry the
// output to a next pre-commit that would trust a later fsync. The restart
// from checkpoint 1 cuts the open file back and writes the rest again:
// every record once. (Before, the pre-commit was declined, and the next
// one's fsync taken as making everything durable.)
func TestAFailedFsyncLosesTheOutputInFlightAndTheRestartWritesItOnce(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			f := &faults{kind: map[errorfs.OpKind]bool{errorfs.OpFileSync: true}, path: inProgressPrefix, err: errorfs.ErrInjected}
			mem := vfs.NewMem()
			span := func(c *Config) { c.RollSize = 1 << 30; c.RollOnCheckpoint = false }
			s := newTestFile(t, errorfs.Wrap(mem, f), span)
			w := newTestWriter(t, s, 0)
			writeRange(t, w, 0, 300)
			restored := preCommit(t, w, 1)
			commit(t, s, restored)
			w.Committed(1)
			writeRange(t, w, 300, 600)
			f.on.Store(true)
			preCommit2 := func() error { _, err := w.PreCommit(ctx, 2); return err }
			if async {
				preCommit2 = func() error { _, err := preCommitAsync(t, w, 2)(); return err }
			}
			err := preCommit2()
			f.on.Store(false)
			if !errors.Is(err, sink.ErrLost) || !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("pre-commit 2 with a failed fsync = %v, want ErrLost wrapping it", err)
			}
			if err := preCommit2(); !errors.Is(err, sink.ErrLost) {
				t.Fatalf("pre-commit 2 asked again, the disk healthy = %v: a later fsync says nothing of the bytes before a failed one; want ErrLost again", err)
			}
			_ = w.Close()
			_ = s.Close()

			s2 := newTestFile(t, mem, span) // the restart, from checkpoint 1
			if err := s2.Recover(ctx, restored); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			r := newTestWriter(t, s2, 0)
			writeRange(t, r, 300, 600)
			r.(sink.InputEnder).EndInput()
			commit(t, s2, preCommit(t, r, 2))
			assertExactlyOnce(t, mem, ids(0, 600))
		})
	}
}

func TestDiskFullDeclinesPreCommitAndTheNextCarriesEverything(t *testing.T) {
	f := &faults{kind: map[errorfs.OpKind]bool{errorfs.OpFileWriteAt: true, errorfs.OpCreate: true}, err: syscall.ENOSPC}
	declineThenRecover(t, f, syscall.ENOSPC, func(c *Config) { c.RollSize = 16 << 10 })
}

func TestDiskFullHalfWayThroughAWriteInALargePartLosesAndDuplicatesNothing(t *testing.T) {
	// Parts larger than the write buffer: the failure hits buffer flushes in
	// the middle of a part, each write stores half its bytes before failing,
	// and the rest must be written again at the right offset.
	mem := vfs.NewMem()
	hf := &halfFS{FS: mem}
	s := newTestFile(t, hf, func(c *Config) { c.RollSize = 1 << 30 })
	declineThenRecoverOn(t, mem, s, &hf.on, syscall.ENOSPC, 20000)
}

// halfFS's files, while on, write half of each WriteAt and fail with ENOSPC.
type halfFS struct {
	vfs.FS
	on atomic.Bool
}

func (h *halfFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := h.FS.Create(name, c)
	return &halfFile{File: f, on: &h.on}, err
}

type halfFile struct {
	vfs.File
	on *atomic.Bool
}

func (f *halfFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.on.Load() {
		return f.File.WriteAt(p, off)
	}
	n, err := f.File.WriteAt(p[:len(p)/2], off)
	if err != nil {
		return n, err
	}
	return n, syscall.ENOSPC
}

func TestDirSyncFailureDuringPreCommitDeclinesAndTheNextCarriesEverything(t *testing.T) {
	// Only the directory itself, not the files in it.
	var on atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && op.Kind == errorfs.OpFileSync && op.Path == testDir {
			return errorfs.ErrInjected
		}
		return nil
	})
	mem := vfs.NewMem()
	s := newTestFile(t, errorfs.Wrap(mem, inj), nil)
	w := newTestWriter(t, s, 1)
	writeRange(t, w, 0, 100)
	on.Store(true)
	if _, err := w.PreCommit(ctx, 1); !errors.Is(err, sink.ErrNotDurable) {
		t.Fatalf("PreCommit(1) = %v, want ErrNotDurable", err)
	}
	if err := s.Commit(ctx, nil); !errors.Is(err, sink.ErrCommitFailed) {
		t.Fatalf("Commit with a failing dir sync = %v, want ErrCommitFailed", err)
	}
	on.Store(false)
	writeRange(t, w, 100, 200)
	cs := preCommit(t, w, 2)
	if len(cs) != 1 || cs[0].Checkpoint != 2 {
		t.Fatalf("PreCommit(2) = %+v, want one committable for 2", cs)
	}
	commit(t, s, cs)
	assertExactlyOnce(t, mem, ids(0, 200))
}

func TestCommitRenameFailureIsRetryableAndTheRetryIsExactlyOnce(t *testing.T) {
	f := &faults{kind: map[errorfs.OpKind]bool{errorfs.OpRename: true}, path: inProgressPrefix + "part-orders-w0-000000000001-1", err: errorfs.ErrInjected}
	s, mem := faultyFile(t, f, func(c *Config) { c.RollSize = 4 << 10 })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 300)
	cs := preCommit(t, w, 1)
	f.on.Store(true)
	if err := s.Commit(ctx, cs); !errors.Is(err, sink.ErrCommitFailed) || errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Commit = %v, want ErrCommitFailed only", err)
	}
	_ = w.Close()
	if err := s.Recover(ctx, cs); !errors.Is(err, sink.ErrCommitFailed) {
		t.Fatalf("Recover = %v, want ErrCommitFailed", err)
	}
	f.on.Store(false)
	commit(t, s, cs)
	assertExactlyOnce(t, mem, ids(0, 300))
}

func TestRecoverReportsFilesItCannotRemove(t *testing.T) {
	f := &faults{kind: map[errorfs.OpKind]bool{errorfs.OpRemove: true}, err: errorfs.ErrInjected}
	s, _ := faultyFile(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	preCommit(t, w, 1)
	f.on.Store(true)
	_ = w.Close()
	if err := s.Recover(ctx, nil); !errors.Is(err, sink.ErrCommitFailed) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Recover = %v", err)
	}
}

func TestWriteFailsOnceTheBacklogOfAFailingDiskExceedsItsLimit(t *testing.T) {
	f := &faults{kind: map[errorfs.OpKind]bool{errorfs.OpFileWriteAt: true}, err: syscall.ENOSPC}
	s, _ := faultyFile(t, f, func(c *Config) { c.Format = FormatRaw })
	w := newTestWriter(t, s, 0)
	f.on.Store(true)
	big := make([]byte, 1<<20)
	var err error
	for i := 0; i < 2*maxBacklog>>20 && err == nil; i++ {
		err = w.Write(ctx, &record.Record{Value: big})
	}
	if !errors.Is(err, sink.ErrNotDurable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write with a full disk and %d MiB buffered = %v, want ErrNotDurable wrapping ENOSPC", maxBacklog>>20, err)
	}
}
