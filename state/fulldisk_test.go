package state

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestACheckpointOnAFullDiskFailsAndTheNextOneAfterSucceeds: the disk
// fills up, so the changelog of barrier 2 cannot be written, the
// checkpoint fails, and the next barrier takes a full snapshot. With the
// disk still full, that one fails too ("a full disk: the checkpoint fails,
// the job goes on"), where it held the worker's goroutine: db.Flush waits
// until the memtable is flushed, and Pebble retries a failed flush
// without end. Once the disk has room, the next checkpoint holds every
// write.
func TestACheckpointOnAFullDiskFailsAndTheNextOneAfterSucceeds(t *testing.T) {
	root := t.TempDir()
	var full atomic.Bool
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !full.Load() || !strings.HasPrefix(op.Path, root) {
			return nil
		}
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt:
			return fmt.Errorf("injected: %w", syscall.ENOSPC)
		}
		return nil
	}))
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FS: fs})
	set(t, s, "a", "1")
	checkpointT(t, s, root, 1)

	full.Store(true)
	set(t, s, "b", "2")
	p, err := s.Checkpoint(fullDir(root, 2), changelogPath(root, 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Wait on a full disk = %v, want ENOSPC", err)
	}

	set(t, s, "c", "3")
	done := make(chan error, 1)
	go func() {
		p, err := s.Checkpoint(fullDir(root, 3), changelogPath(root, 3))
		if err == nil {
			_, err = p.Wait()
		}
		done <- err
	}()
	select {
	case err := <-done:
		full.Store(false)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("a full snapshot on a full disk: %v, want ENOSPC", err)
		}
	case <-time.After(20 * time.Second):
		full.Store(false) // let Pebble's flush through, so the goroutine ends
		<-done
		t.Fatal("Checkpoint (full snapshot) on a full disk did not return within 20 s: " +
			"the worker is blocked in Pebble's Flush, which retries the failed flush until the disk has room")
	}
	set(t, s, "d", "4")
	c := checkpointOnceRoom(t, s, root, 4)
	got := contents(t, openChain(t, root, c))
	if want := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}; !maps.Equal(got, want) {
		t.Fatalf("checkpoint 4, after the disk had room again, restores %v, want %v", got, want)
	}
}

// checkpointOnceRoom takes checkpoints from barrier n on until one
// succeeds, within 10 s, and returns its chain: once the disk has room, a
// checkpoint fails with the full disk's error until Pebble's retry of the
// failed flush went through (flushWait), a few milliseconds.
func checkpointOnceRoom(t *testing.T, s *Store, root string, n int) Chain {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ; ; n++ {
		p, err := s.Checkpoint(fullDir(root, n), changelogPath(root, n))
		if err == nil {
			var c Chain
			if c, err = p.Wait(); err == nil {
				return c
			}
		}
		if !errors.Is(err, syscall.ENOSPC) || time.Now().After(deadline) {
			t.Fatalf("checkpoint %d, the disk having room again: %v", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
