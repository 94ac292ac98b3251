package file

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
)

// preCommitAsync starts a pre-commit of w; finish completes it and
// returns its committables.
func preCommitAsync(t *testing.T, w sink.Writer, id checkpoint.ID) func() ([]sink.Committable, error) {
	t.Helper()
	apc, ok := w.(sink.AsyncPreCommitter)
	if !ok {
		t.Fatalf("the file writer does not pre-commit asynchronously")
	}
	finish, err := apc.PreCommitAsync(ctx, id)
	if err != nil {
		t.Fatalf("PreCommitAsync(%d): %v", id, err)
	}
	return finish
}

// TestAsyncPreCommitLeavesLaterWritesToTheNextCheckpoint: records written
// while finish runs belong to the next checkpoint; committing the first
// shows exactly the records before its barrier.
func TestAsyncPreCommitLeavesLaterWritesToTheNextCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	finish := preCommitAsync(t, w, 1)
	writeRange(t, w, 100, 200) // before finish: the worker goes on
	cs, err := finish()
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	commit(t, s, cs)
	assertExactlyOnce(t, fs, ids(0, 100))
	w.Committed(1)
	cs2, err := preCommitAsync(t, w, 2)()
	if err != nil {
		t.Fatalf("finish 2: %v", err)
	}
	if len(cs2) != 1 || cs2[0].Checkpoint != 2 {
		t.Fatalf("committables of checkpoint 2: %+v, want only its own", cs2)
	}
	commit(t, s, cs2)
	assertExactlyOnce(t, fs, ids(0, 200))
}

// TestAsyncPreCommitThatFailsCarriesItsOutputToTheNextCheckpoint: when
// the directory sync fails, finish reports ErrNotDurable, checkpoint 1's
// committable is withdrawn, and the next pre-commit carries its records:
// one commit shows every record once, whether pre-commits roll the open
// file or not (then the input ends before 2, to roll it). (A file's
// failed fsync is ErrLost: TestAFailedFsyncLosesTheOutputInFlightAndThe
// RestartWritesItOnce.)
func TestAsyncPreCommitThatFailsCarriesItsOutputToTheNextCheckpoint(t *testing.T) {
	for name, f := range map[string]*faults{
		"dir sync": {kind: map[errorfs.OpKind]bool{errorfs.OpFileSync: true}, only: testDir, err: errorfs.ErrInjected},
	} {
		for _, onCheckpoint := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/roll_on_checkpoint=%v", name, onCheckpoint), func(t *testing.T) {
				asyncPreCommitFails(t, f, onCheckpoint)
			})
		}
	}
}

func asyncPreCommitFails(t *testing.T, f *faults, onCheckpoint bool) {
	s, mem := faultyFile(t, f, func(c *Config) { c.RollSize = 4 << 10; c.RollOnCheckpoint = onCheckpoint })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 300)
	f.on.Store(true)
	finish := preCommitAsync(t, w, 1)
	_, err := finish()
	f.on.Store(false)
	if !errors.Is(err, sink.ErrNotDurable) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("finish = %v, want ErrNotDurable wrapping the injected error", err)
	}
	writeRange(t, w, 300, 400)
	w.(sink.InputEnder).EndInput()
	cs, err := preCommitAsync(t, w, 2)()
	if err != nil {
		t.Fatalf("finish 2: %v", err)
	}
	for _, c := range cs {
		if c.Checkpoint != 2 {
			t.Fatalf("committables %+v: checkpoint 1 failed and must not be among them", cs)
		}
	}
	commit(t, s, cs)
	assertExactlyOnce(t, mem, ids(0, 400))
}
