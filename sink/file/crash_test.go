package file

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// crashCases are the crash clones each crash test runs against: exactly the
// synced state, and half of the unsynced writes and directory entries kept,
// with several seeds.
func crashCases(f func(t *testing.T, cfg vfs.CrashCloneCfg)) func(*testing.T) {
	return func(t *testing.T) {
		for _, pct := range []int{0, 50} {
			for seed := range uint64(5) {
				t.Run(fmt.Sprintf("unsynced%d/seed%d", pct, seed), func(t *testing.T) {
					cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: pct}
					if pct > 0 {
						cfg.RNG = rand.New(rand.NewPCG(seed, 0))
					}
					f(t, cfg)
				})
			}
		}
	}
}

func TestCrashAfterPreCommitThenRecoverLosesAndDuplicatesNothing(t *testing.T) {
	crashCases(func(t *testing.T, cfg vfs.CrashCloneCfg) {
		mem := vfs.NewCrashableMem()
		small := func(c *Config) { c.RollSize = 8 << 10 }
		s := newTestFile(t, mem, small)
		w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
		writeRange(t, w0, 0, 1000)
		writeRange(t, w1, 1000, 2000)
		restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
		// After the barrier: pre-committed for a checkpoint that never
		// completes, and in progress, partly written and unsynced.
		writeRange(t, w0, 2000, 3000)
		preCommit(t, w0, 2)
		writeRange(t, w1, 3000, 4000)

		crashed := mem.CrashClone(cfg)
		s2 := newTestFile(t, crashed, small)
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		assertExactlyOnce(t, crashed, ids(0, 2000))
		if _, hidden := listDir(t, crashed); len(hidden) != 0 {
			t.Fatalf("hidden files after Recover: %v", hidden)
		}
		// The restarted job goes on: the source replays from 2000.
		w := newTestWriter(t, s2, 0)
		writeRange(t, w, 2000, 4000)
		commit(t, s2, preCommit(t, w, 2))
		assertExactlyOnce(t, crashed, ids(0, 4000))
	})(t)
}

func TestCrashBetweenTwoCommitRenamesThenCommitAgainIsExactlyOnce(t *testing.T) {
	crashCases(func(t *testing.T, cfg vfs.CrashCloneCfg) {
		mem := vfs.NewCrashableMem()
		var renames atomic.Int32
		var crashed *vfs.MemFS
		// Before the second rename of a rolled file, take the crash clone.
		inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind == errorfs.OpRename && strings.Contains(op.Path, inProgressPrefix) && renames.Add(1) == 2 {
				crashed = mem.CrashClone(cfg)
			}
			return nil
		})
		small := func(c *Config) { c.RollSize = 8 << 10 }
		s := newTestFile(t, errorfs.Wrap(mem, inj), small)
		w := newTestWriter(t, s, 0)
		writeRange(t, w, 0, 1000)
		cs := preCommit(t, w, 1)
		commit(t, s, cs)
		if crashed == nil {
			t.Fatal("commit renamed fewer than two files; nothing to crash between")
		}
		s2 := newTestFile(t, crashed, small)
		commit(t, s2, cs) // the notification repeated after restart
		assertExactlyOnce(t, crashed, ids(0, 1000))
		if err := s2.Recover(ctx, cs); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		assertExactlyOnce(t, crashed, ids(0, 1000))
	})(t)
}
