package file

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/sink"
)

// span configures files that span checkpoints (the default of a config
// file) for writers 0 and 1, rolling at roll bytes.
func span(roll config.ByteSize) func(*Config) {
	return func(c *Config) { c.RollSize, c.RollOnCheckpoint, c.Writers = roll, false, 2 }
}

// TestFilesSpanCheckpointsAndBecomeVisibleOnlyWhenTheyRoll: one checkpoint
// per 50 records, files of 16 KiB: every committed file reaches the roll
// size (the small-files problem is gone), the open file stays
// hidden across checkpoints, and the end of input rolls it.
func TestFilesSpanCheckpointsAndBecomeVisibleOnlyWhenTheyRoll(t *testing.T) {
	fs := vfs.NewMem()
	const roll = 16 << 10
	s := newTestFile(t, fs, span(roll))
	w := newTestWriter(t, s, 0)
	for id := checkpoint.ID(1); id <= 40; id++ {
		writeRange(t, w, int(id-1)*50, int(id)*50)
		commit(t, s, preCommit(t, w, id))
		w.Committed(id)
		if _, hidden := listDir(t, fs); len(hidden) != 1 {
			t.Fatalf("after checkpoint %d: hidden %v, want the one open file", id, hidden)
		}
	}
	visible, _ := listDir(t, fs)
	if len(visible) < 3 {
		t.Fatalf("visible %v after 40 checkpoints, want a few files of %d bytes", visible, roll)
	}
	for _, name := range visible {
		if n := len(readFile(t, fs, name)); n < roll {
			t.Fatalf("%s holds %d bytes: a file rolled before %d", name, n, roll)
		}
	}
	w.(sink.InputEnder).EndInput()
	commit(t, s, preCommit(t, w, 41))
	if _, hidden := listDir(t, fs); len(hidden) != 0 {
		t.Fatalf("after the end of input: hidden %v", hidden)
	}
	assertExactlyOnce(t, fs, ids(0, 2000))
}

// TestCrashWithOpenFilesResumesThemExactlyOnce: a crash after checkpoint 1
// (whose open files were then written on and, for writer 0, rolled by the
// pre-commit of 2, which never completed). The restart cuts each open file
// back to what 1 recorded, and the writers go on writing them.
func TestCrashWithOpenFilesResumesThemExactlyOnce(t *testing.T) {
	crashCases(func(t *testing.T, cfg vfs.CrashCloneCfg) {
		mem := vfs.NewCrashableMem()
		s := newTestFile(t, mem, span(1<<20))
		w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
		writeRange(t, w0, 0, 1000)
		writeRange(t, w1, 1000, 2000)
		restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
		writeRange(t, w0, 2000, 3000)
		w0.(sink.InputEnder).EndInput()
		preCommit(t, w0, 2)
		writeRange(t, w1, 3000, 4000)

		crashed := mem.CrashClone(cfg)
		s2 := newTestFile(t, crashed, span(1<<20))
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if visible, hidden := listDir(t, crashed); len(visible) != 0 || len(hidden) != 2 {
			t.Fatalf("after Recover: visible %v, hidden %v; want the two open files only", visible, hidden)
		}
		r0, r1 := newTestWriter(t, s2, 0), newTestWriter(t, s2, 1)
		writeRange(t, r0, 2000, 3000)
		writeRange(t, r1, 3000, 4000)
		r0.(sink.InputEnder).EndInput()
		r1.(sink.InputEnder).EndInput()
		commit(t, s2, append(preCommit(t, r0, 2), preCommit(t, r1, 2)...))
		assertExactlyOnce(t, crashed, ids(0, 4000))
		if visible, _ := listDir(t, crashed); len(visible) != 2 {
			t.Fatalf("visible %v: want one file per writer, each resumed", visible)
		}
	})(t)
}

// TestRecoverCommitsTheOpenFilesOfWritersTheJobNoLongerHas: restored at
// parallelism 1, writer 1's open file is committed at once (its records
// are in checkpoint 1, and no writer would take it on).
func TestRecoverCommitsTheOpenFilesOfWritersTheJobNoLongerHas(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, span(1<<20))
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	writeRange(t, w0, 0, 100)
	writeRange(t, w1, 100, 200)
	restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
	_, _ = w0.Close(), w1.Close()
	_ = s.Close()

	s2 := newTestFile(t, fs, func(c *Config) { span(1 << 20)(c); c.Writers = 1 })
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	visible, hidden := listDir(t, fs)
	if len(visible) != 1 || visible[0] != "part-orders-000000000001-w1-0.jsonl" || len(hidden) != 1 {
		t.Fatalf("after Recover: visible %v, hidden %v; want writer 1's file committed, writer 0's kept", visible, hidden)
	}
	r0 := newTestWriter(t, s2, 0)
	r0.(sink.InputEnder).EndInput()
	commit(t, s2, preCommit(t, r0, 2))
	assertExactlyOnce(t, fs, ids(0, 200))
}

// TestRecoverFailsWhenARestoredOpenFileIsGone: the records of checkpoint 1
// in the open file are nowhere else; a restart must not go on silently.
func TestRecoverFailsWhenARestoredOpenFileIsGone(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, span(1<<20))
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	restored := preCommit(t, w, 1)
	_ = w.Close()
	var fc fileCommittable
	if err := json.Unmarshal(restored[0].Data, &fc); err != nil || len(fc.OpenFiles) != 1 {
		t.Fatalf("committable %s: want an open file (%v)", restored[0].Data, err)
	}
	if err := fs.Remove(fs.PathJoin(testDir, fc.OpenFiles[0].Name)); err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, restored); !errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Recover = %v, want ErrCommitLost", err)
	}
}

// TestCommittablesOfTheFormerNamesAreStillCommitted: a checkpoint written
// by an earlier version records committed names whose files wait under
// .pending.; restoring it commits them, and its hidden files go.
func TestCommittablesOfTheFormerNamesAreStillCommitted(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, span(1<<20))
	write := func(name string, from, to int) {
		f, err := fs.Create(fs.PathJoin(testDir, name), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			_, _ = f.Write(append(value(i), '\n'))
		}
		_ = f.Close()
	}
	write(".pending.part-orders-w0-3-0.jsonl", 0, 10)
	write(".inprogress.part-orders-w0-1.jsonl", 10, 20)
	restored := []sink.Committable{{Checkpoint: 3, Data: json.RawMessage(`{"files":["part-orders-w0-3-0.jsonl"]}`)}}
	if err := s.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if visible, hidden := listDir(t, fs); len(visible) != 1 || visible[0] != "part-orders-w0-3-0.jsonl" || len(hidden) != 0 {
		t.Fatalf("visible %v, hidden %v", visible, hidden)
	}
	assertExactlyOnce(t, fs, ids(0, 10))
	if got, _ := s.CommittedAfter(ctx, 2); len(got) != 1 {
		t.Fatalf("CommittedAfter(2) = %v, want the former name", got)
	}
}

// TestAFileRollsByAgeAtAPreCommitWithoutAnotherRecord: a quiet input's last
// records become visible at the first checkpoint after roll_age.
func TestAFileRollsByAgeAtAPreCommitWithoutAnotherRecord(t *testing.T) {
	fs := vfs.NewMem()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := newTestFile(t, fs, func(c *Config) { span(1 << 20)(c); c.RollAge = time.Minute; c.Now = clock.Now })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	commit(t, s, preCommit(t, w, 1))
	clock.Advance(59 * time.Second)
	commit(t, s, preCommit(t, w, 2))
	if visible, _ := listDir(t, fs); len(visible) != 0 {
		t.Fatalf("visible %v before roll_age", visible)
	}
	clock.Advance(time.Second)
	commit(t, s, preCommit(t, w, 3))
	assertParts(t, fs, 10, "part-orders-000000000003-w0-0.jsonl")
}
