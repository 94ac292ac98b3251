package file

import (
	"errors"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/sink"
)

// TestCommitNeverReplacesACommittedFile: when checkpoint ids are reused (the
// checkpoint dir was wiped, the output kept), a new pending file with the
// name of a committed one is refused instead of overwriting it.
func TestCommitNeverReplacesACommittedFile(t *testing.T) {
	fs := vfs.NewMem()
	run := func(from, to int) ([]sink.Committable, *File) {
		s := newTestFile(t, fs, nil)
		w := newTestWriter(t, s, 0)
		writeRange(t, w, from, to)
		cs := preCommit(t, w, 1)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return cs, s
	}
	cs, s := run(0, 3)
	commit(t, s, cs)
	if err := s.Close(); err != nil { // the process ends: its lock goes
		t.Fatal(err)
	}
	before := visibleLines(t, fs)
	cs2, s2 := run(3, 6) // checkpoint 1 again, as after a reset of the checkpoint dir
	if err := s2.Commit(ctx, cs2); !errors.Is(err, sink.ErrCommitConflict) {
		t.Fatalf("commit over a committed file: %v, want ErrCommitConflict", err)
	}
	if after := visibleLines(t, fs); !slices.Equal(before, after) {
		t.Fatalf("visible output changed from %v to %v", before, after)
	}
}
