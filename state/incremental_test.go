package state

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// checkpointT runs both parts of a Checkpoint for barrier n under root.
func checkpointT(t testing.TB, s *Store, root string, n int) Chain {
	t.Helper()
	p, err := s.Checkpoint(fullDir(root, n), changelogPath(root, n))
	if err != nil {
		t.Fatalf("Checkpoint %d: %v", n, err)
	}
	c, err := p.Wait()
	if err != nil {
		t.Fatalf("Checkpoint %d: Wait: %v", n, err)
	}
	return c
}

func fullDir(root string, n int) string { return filepath.Join(root, fmt.Sprintf("chk-%d", n), "w") }
func changelogPath(root string, n int) string {
	return filepath.Join(root, fmt.Sprintf("chk-%d", n), "w.changelog")
}

// openChain restores c into a fresh working directory under root.
func openChain(t testing.TB, root string, c Chain) *Store {
	t.Helper()
	return openCfg(t, Config{Dir: filepath.Join(root, fmt.Sprintf("restore-%d", rand.Int())), Restore: whole(c)})
}

// Random sets and deletes over 40 barriers, with a FullSnapshotAfter small
// enough that full snapshots run in the background (while the next writes
// go on) and become the base. Every barrier's chain restores exactly the
// state at that barrier, and the files it lists all exist. A barrier adopts
// a background full snapshot only if it has finished, so after every other
// barrier the test waits for a running one: those are adopted for certain,
// the others when they happen to finish in time.
func TestCheckpointChainsRestoreExactlyTheBarrierState(t *testing.T) {
	checkChainsRestoreExactly(t)
}

// The same with the changelogs streamed as their deltas fill (stream.go):
// every one but the smallest is written by a stream, and no stream's file
// is left behind. In chunks of 256 bytes, and of 13 (which most entries
// span: changelog.go).
func TestStreamedChangelogsRestoreExactlyTheBarrierState(t *testing.T) {
	defer func(n int) { deltaChunk = n }(deltaChunk)
	for _, chunk := range []int{256, 13} {
		t.Run(fmt.Sprintf("chunks-of-%d", chunk), func(t *testing.T) {
			deltaChunk = chunk
			s := checkChainsRestoreExactly(t)
			if s.streams < 30 {
				t.Errorf("%d streams over 40 barriers of 250-1250 bytes of writes, want most of them streamed", s.streams)
			}
			if left := streamFiles(t, s.fs, s.dir); len(left) > 1 { // the current delta's
				t.Errorf("stream files left: %v", left)
			}
		})
	}
}

// streamFiles lists the stream files of the Store of working directory dir.
func streamFiles(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, filepath.Base(streamPrefix(dir))) {
			out = append(out, n)
		}
	}
	return out
}

func checkChainsRestoreExactly(t *testing.T) *Store {
	root := t.TempDir()
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FullSnapshotAfter: 4 << 10})
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]string{}
	type taken struct {
		chain Chain
		want  map[string]string
	}
	var all []taken
	bases := map[string]bool{}
	for n := 1; n <= 40; n++ {
		for i := range 50 + rng.IntN(200) {
			k := fmt.Sprintf("k%04d", rng.IntN(600))
			if rng.IntN(5) == 0 {
				del(t, s, k)
				delete(model, k)
				continue
			}
			v := fmt.Sprintf("v%d-%d", n, i)
			set(t, s, k, v)
			model[k] = v
		}
		p, err := s.Checkpoint(fullDir(root, n), changelogPath(root, n))
		if err != nil {
			t.Fatalf("Checkpoint %d: %v", n, err)
		}
		want := maps.Clone(model)
		// Writes after the barrier, before its changelog is written: not
		// in this snapshot.
		for i := range 20 {
			k := fmt.Sprintf("k%04d", rng.IntN(600))
			set(t, s, k, fmt.Sprintf("after%d-%d", n, i))
			model[k] = fmt.Sprintf("after%d-%d", n, i)
		}
		c, err := p.Wait()
		if err != nil {
			t.Fatalf("Wait %d: %v", n, err)
		}
		all = append(all, taken{c, want})
		bases[c.Base] = true
		if n%2 == 0 && s.bg != nil {
			<-s.bg.done // the next barrier adopts it
		}
	}
	if len(bases) < 3 {
		t.Fatalf("only %d distinct bases over 40 barriers: background full snapshots were not adopted", len(bases))
	}
	for i, tk := range all {
		for _, f := range tk.chain.Files() {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("barrier %d: chain file missing: %v", i+1, err)
			}
		}
		wantContents(t, openChain(t, root, tk.chain), tk.want)
	}
	return s
}

// A restored chain goes on: the next snapshots extend it, and restore.
func TestChainGoesOnAfterRestore(t *testing.T) {
	root := t.TempDir()
	s := openT(t, filepath.Join(root, "a"), "")
	set(t, s, "a", "1")
	checkpointT(t, s, root, 1)
	set(t, s, "b", "2")
	c2 := checkpointT(t, s, root, 2)
	if c2.Base != "" || len(c2.Changelogs) != 2 {
		t.Fatalf("chain = %+v, want no base and 2 changelogs", c2)
	}

	r := openChain(t, root, c2)
	set(t, r, "c", "3")
	del(t, r, "a")
	c3 := checkpointT(t, r, root, 3)
	if !slices.Equal(c3.Changelogs[:2], c2.Changelogs) || len(c3.Changelogs) != 3 {
		t.Fatalf("chain after restore = %v, want %v plus one", c3.Changelogs, c2.Changelogs)
	}
	wantContents(t, openChain(t, root, c3), map[string]string{"b": "2", "c": "3"})
}

// Writes that outgrow FullSnapshotAfter between two barriers are not kept:
// the next barrier takes a full snapshot synchronously, a chain of its own.
func TestOversizedDeltaGivesAFullSnapshot(t *testing.T) {
	defer func(c int) { deltaChunk = c }(deltaChunk)
	for _, chunk := range []int{deltaChunk, 64} { // in memory, and dropped while it streamed
		t.Run(fmt.Sprintf("chunks-of-%d", chunk), func(t *testing.T) {
			deltaChunk = chunk
			root := t.TempDir()
			s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FullSnapshotAfter: 1 << 10})
			want := map[string]string{}
			for i := range 200 {
				k := fmt.Sprintf("key-%03d", i)
				set(t, s, k, "value")
				want[k] = "value"
			}
			c := checkpointT(t, s, root, 1)
			if c.Base != fullDir(root, 1) || len(c.Changelogs) != 0 {
				t.Fatalf("chain = %+v, want the full snapshot %s alone", c, fullDir(root, 1))
			}
			if left := streamFiles(t, s.fs, s.dir); len(left) > 0 || chunk == 64 && s.streams == 0 {
				t.Fatalf("%d streams, files left: %v; want the dropped delta's stream gone", s.streams, left)
			}
			wantContents(t, openChain(t, root, c), want)
			set(t, s, "small", "x")
			want["small"] = "x"
			c = checkpointT(t, s, root, 2)
			if c.Base != fullDir(root, 1) || len(c.Changelogs) != 1 {
				t.Fatalf("chain = %+v, want the full snapshot and one changelog", c)
			}
			wantContents(t, openChain(t, root, c), want)
		})
	}
}

// A changelog that cannot be written fails the checkpoint and leaves no
// file; the next checkpoint is a full snapshot, which holds its writes.
func TestAFailedChangelogGivesAFullSnapshotNext(t *testing.T) {
	for name, kind := range map[string]errorfs.OpKind{
		"create": errorfs.OpCreate, "write": errorfs.OpFileWrite, "sync": errorfs.OpFileSync,
		"dirsync": errorfs.OpFileSync, "parentsync": errorfs.OpFileSync,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			bad := map[string]string{"dirsync": filepath.Dir(changelogPath(root, 2)), "parentsync": root}[name]
			if bad == "" {
				bad = changelogPath(root, 2)
			}
			var failing atomic.Bool
			fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if failing.Load() && op.Kind == kind && op.Path == bad {
					return errorfs.ErrInjected
				}
				return nil
			}))
			s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FS: fs})
			set(t, s, "a", "1")
			checkpointT(t, s, root, 1)
			set(t, s, "b", "2")
			del(t, s, "a")
			p, err := s.Checkpoint(fullDir(root, 2), changelogPath(root, 2))
			if err != nil {
				t.Fatal(err)
			}
			failing.Store(true)
			_, err = p.Wait()
			failing.Store(false)
			if !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), changelogPath(root, 2)) {
				t.Fatalf("Wait = %v, want the injected error naming the changelog", err)
			}
			if _, err := os.Stat(changelogPath(root, 2)); !os.IsNotExist(err) {
				t.Fatalf("failed changelog left behind: %v", err)
			}
			set(t, s, "c", "3")
			c := checkpointT(t, s, root, 3)
			if c.Base != fullDir(root, 3) || len(c.Changelogs) != 0 {
				t.Fatalf("chain = %+v, want the full snapshot %s alone", c, fullDir(root, 3))
			}
			wantContents(t, openChain(t, root, c), map[string]string{"b": "2", "c": "3"})
			set(t, s, "d", "4")
			if c = checkpointT(t, s, root, 4); len(c.Changelogs) != 1 {
				t.Fatalf("chain = %+v, want the full snapshot and a changelog", c)
			}
			wantContents(t, openChain(t, root, c), map[string]string{"b": "2", "c": "3", "d": "4"})
		})
	}
}

// holdFS blocks the first Stat of dir (the first thing Pebble's Checkpoint
// does) until release is closed, and reports in held that it got there.
func holdFS(dir string) (fs vfs.FS, held chan struct{}, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs = errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpStat && op.Path == dir {
			once.Do(func() { close(held); <-release })
		}
		return nil
	}))
	return fs, held, release
}

// A background full snapshot is fuzzy: writes made after its barrier, while
// it runs, end up in it. Its chain still restores exactly, because the
// changelogs after it overwrite those keys.
func TestFuzzyFullSnapshotRestoresExactly(t *testing.T) {
	root := t.TempDir()
	fs, held, release := holdFS(fullDir(root, 3))
	// Changelogs 1 and 2 make 60 bytes: barrier 3 starts a full snapshot.
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FS: fs, FullSnapshotAfter: 40})
	set(t, s, "a", "1")
	set(t, s, "b", "1")
	checkpointT(t, s, root, 1)
	set(t, s, "c", "2")
	checkpointT(t, s, root, 2)
	set(t, s, "e", "3")
	if c := checkpointT(t, s, root, 3); c.Base != "" || len(c.Changelogs) != 3 {
		t.Fatalf("chain at 3 = %+v, want 3 changelogs and no base yet", c)
	}
	<-held // the background full snapshot of barrier 3 is about to start
	set(t, s, "a", "after")
	del(t, s, "b")
	set(t, s, "d", "after")
	flush(t, s) // into an sstable the snapshot links
	close(release)
	<-s.bg.done
	c := checkpointT(t, s, root, 4)
	if c.Base != fullDir(root, 3) || len(c.Changelogs) != 1 {
		t.Fatalf("chain at 4 = %+v, want the full snapshot of 3 and one changelog", c)
	}
	if got := contents(t, openChain(t, root, Chain{Base: c.Base})); got["a"] != "after" || got["d"] != "after" {
		t.Fatalf("full snapshot = %v: it holds no write after its barrier, the test proves nothing", got)
	}
	wantContents(t, openChain(t, root, c), map[string]string{"a": "after", "c": "2", "d": "after", "e": "3"})
}

// failMkdir is a filesystem on which creating dir fails.
func failMkdir(dir string) vfs.FS {
	return errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpMkdirAll && op.Path == dir {
			return errorfs.ErrInjected
		}
		return nil
	}))
}

// A background full snapshot that fails is logged and retried at the next
// barrier; the chain goes on with changelogs meanwhile.
func TestFailedFullSnapshotIsRetried(t *testing.T) {
	root := t.TempDir()
	fs := failMkdir(fullDir(root, 2))
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FS: fs, FullSnapshotAfter: 20})
	set(t, s, "a", "1")
	checkpointT(t, s, root, 1)
	set(t, s, "b", "2")
	checkpointT(t, s, root, 2) // starts the full snapshot that fails
	<-s.bg.done
	set(t, s, "c", "3")
	c := checkpointT(t, s, root, 3) // notes the failure, starts another
	if c.Base != "" || len(c.Changelogs) != 3 {
		t.Fatalf("chain at 3 = %+v, want 3 changelogs", c)
	}
	<-s.bg.done
	c = checkpointT(t, s, root, 4)
	if c.Base != fullDir(root, 3) {
		t.Fatalf("chain at 4 = %+v, want the full snapshot of 3", c)
	}
	wantContents(t, openChain(t, root, c), map[string]string{"a": "1", "b": "2", "c": "3"})
}

// A background full snapshot that a synchronous one replaced before any
// chain named it is removed, and so is one still unused at Close.
func TestUnusedFullSnapshotsAreRemoved(t *testing.T) {
	root := t.TempDir()
	// 64 bytes: a 70-byte value outgrows the delta; a 45-byte one makes a
	// 71-byte changelog, enough to start a background full snapshot.
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FullSnapshotAfter: 64})
	set(t, s, "a", "1")
	checkpointT(t, s, root, 1)
	set(t, s, "b", strings.Repeat("x", 70))
	checkpointT(t, s, root, 2) // the delta was dropped: a full snapshot
	set(t, s, "c", strings.Repeat("z", 45))
	checkpointT(t, s, root, 3)
	set(t, s, "d", "4")
	checkpointT(t, s, root, 4) // starts a background full snapshot into chk-4
	<-s.bg.done
	set(t, s, "e", strings.Repeat("y", 70)) // too big again: chk-4's is adopted, then replaced
	c := checkpointT(t, s, root, 5)
	if c.Base != fullDir(root, 5) {
		t.Fatalf("chain at 5 = %+v, want the synchronous full snapshot of 5", c)
	}
	if _, err := os.Stat(fullDir(root, 4)); !os.IsNotExist(err) {
		t.Fatalf("the replaced background full snapshot is still there: %v", err)
	}
	set(t, s, "f", strings.Repeat("w", 45))
	checkpointT(t, s, root, 6)
	set(t, s, "g", "7")
	checkpointT(t, s, root, 7) // starts one into chk-7
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fullDir(root, 7)); !os.IsNotExist(err) {
		t.Fatalf("the background full snapshot no chain named is still there after Close: %v", err)
	}
}

// A background full snapshot adopted while the next synchronous one fails
// is still removed once a synchronous one succeeds: no snapshot named it.
func TestAdoptedFullSnapshotReplacedAfterAFailureIsRemoved(t *testing.T) {
	root := t.TempDir()
	fs := failMkdir(fullDir(root, 3))
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), FS: fs, FullSnapshotAfter: 64})
	set(t, s, "a", strings.Repeat("z", 45)) // a 71-byte changelog
	checkpointT(t, s, root, 1)
	set(t, s, "b", "2")
	checkpointT(t, s, root, 2) // starts a background full snapshot into chk-2
	<-s.bg.done
	set(t, s, "c", strings.Repeat("x", 70)) // outgrows the delta
	if _, err := s.Checkpoint(fullDir(root, 3), changelogPath(root, 3)); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Checkpoint 3 = %v, want the injected error", err)
	}
	c := checkpointT(t, s, root, 4)
	if c.Base != fullDir(root, 4) {
		t.Fatalf("chain at 4 = %+v, want the synchronous full snapshot of 4", c)
	}
	if _, err := os.Stat(fullDir(root, 2)); !os.IsNotExist(err) {
		t.Fatalf("the adopted, never named full snapshot of 2 is still there: %v", err)
	}
	wantContents(t, openChain(t, root, c), map[string]string{"a": strings.Repeat("z", 45), "b": "2", "c": strings.Repeat("x", 70)})
}

// A stream that fails (its file cannot be created, written, synced or
// renamed) cannot be written again from memory: its chunks are gone.
// Before the barrier, the Store notices, drops the delta and the barrier
// takes a full snapshot; after it (at Wait), the checkpoint fails and the
// next barrier takes a full snapshot. Either way the stream's file is
// gone, every chain restores exactly, and the barrier after the full
// snapshot goes on with a streamed changelog.
func TestAFailingChangelogStreamGivesAFullSnapshot(t *testing.T) {
	defer func(c int) { deltaChunk = c }(deltaChunk)
	deltaChunk = 13 // entries across chunks
	// A stream syncs its data every syncChunks chunks as it goes, and the
	// whole file at the barrier's Wait: "sync" fails both.
	kinds := map[string][]errorfs.OpKind{
		"create": {errorfs.OpCreate}, "write": {errorfs.OpFileWrite}, "sync": {errorfs.OpFileSyncData, errorfs.OpFileSync},
		"rename": {errorfs.OpRename},
	}
	for name, kind := range kinds {
		for _, atWait := range []bool{false, true} {
			if name == "create" && atWait || name == "rename" && !atWait {
				continue // a stream is created before the barrier, renamed after it
			}
			t.Run(fmt.Sprintf("%s/at-wait-%v", name, atWait), func(t *testing.T) {
				root := t.TempDir()
				dir := filepath.Join(root, "work")
				var failing atomic.Bool
				fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
					if failing.Load() && slices.Contains(kind, op.Kind) && strings.HasPrefix(op.Path, streamPrefix(dir)) {
						return errorfs.ErrInjected
					}
					return nil
				}))
				s := openCfg(t, Config{Dir: dir, FS: fs})
				want := map[string]string{}
				write := func(n int) {
					for i := range 40 {
						k, v := fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", n)
						set(t, s, k, v)
						want[k] = v
					}
				}
				write(1)
				checkpointT(t, s, root, 1)
				failing.Store(!atWait)
				write(2)
				if !atWait {
					// The stream's goroutine fails on its own time: wait
					// for it, so that the barrier is after the failure.
					for deadline := time.Now().Add(10 * time.Second); s.stream != nil && !s.stream.failed.Load(); {
						if time.Now().After(deadline) {
							t.Fatal("the stream did not fail")
						}
						time.Sleep(time.Millisecond)
					}
				}
				p, err := s.Checkpoint(fullDir(root, 2), changelogPath(root, 2))
				if err != nil {
					t.Fatal(err)
				}
				failing.Store(true)
				c, err := p.Wait()
				failing.Store(false)
				if atWait {
					if !errors.Is(err, errorfs.ErrInjected) {
						t.Fatalf("Wait = %v, want the injected error", err)
					}
					if _, err := os.Stat(changelogPath(root, 2)); !os.IsNotExist(err) {
						t.Fatalf("failed changelog left behind: %v", err)
					}
					write(3)
					c, err = checkpointT(t, s, root, 3), nil
				}
				full := fullDir(root, 3-btoi(!atWait))
				if err != nil || c.Base != full || len(c.Changelogs) != 0 {
					t.Fatalf("chain = %+v (%v), want the full snapshot %s alone", c, err, full)
				}
				wantContents(t, openChain(t, root, c), want)
				write(4)
				c = checkpointT(t, s, root, 4)
				if left := streamFiles(t, fs, dir); len(left) > 0 {
					t.Errorf("stream files left: %v", left)
				}
				if len(c.Changelogs) != 1 || s.streams < 2 {
					t.Errorf("chain %+v after %d streams: want the full snapshot and a streamed changelog", c, s.streams)
				}
				wantContents(t, openChain(t, root, c), want)
			})
		}
	}
}

// A stream writes each chunk as it fills but syncs its file only every
// syncChunks chunks (chunks of 256 KiB, synced a MiB at a time), and the
// changelog it makes restores exactly.
func TestAStreamSyncsEverySyncChunksChunks(t *testing.T) {
	defer func(c int) { deltaChunk = c }(deltaChunk)
	deltaChunk = 64
	root := t.TempDir()
	dir := filepath.Join(root, "work")
	var writes, syncs atomic.Int64
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.HasPrefix(op.Path, streamPrefix(dir)) {
			switch op.Kind {
			case errorfs.OpFileWrite:
				writes.Add(1)
			case errorfs.OpFileSyncData:
				syncs.Add(1)
			}
		}
		return nil
	}))
	s := openCfg(t, Config{Dir: dir, FS: fs})
	want := map[string]string{}
	write := func(n int) {
		for i := range 200 {
			k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d-%d", n, i)
			set(t, s, k, v)
			want[k] = v
		}
	}
	write(1)
	checkpointT(t, s, root, 1)
	writes.Store(0)
	syncs.Store(0)
	streams := s.streams
	write(2)
	c := checkpointT(t, s, root, 2)
	if s.streams != streams+1 {
		t.Fatalf("chain %+v after %d streams: want barrier 2's changelog streamed", c, s.streams)
	}
	// The header, then the full chunks, the last one and the trailer, each
	// one write; a sync after every syncChunks of those.
	chunks := writes.Load() - 1
	if chunks < 4*syncChunks {
		t.Fatalf("%d chunks written: the test wants several syncs' worth", chunks)
	}
	if got := syncs.Load(); got != chunks/syncChunks {
		t.Errorf("%d syncs for %d chunks written, want one every %d (%d)", got, chunks, syncChunks, chunks/syncChunks)
	}
	wantContents(t, openChain(t, root, c), want)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Wait runs on its own goroutine while the worker goes on writing, and the
// next delta fills chunks that the Pending's stream wrote and recycled. On
// Pebble's MemFS, which scribbles on what it was given to write in
// race-enabled builds, every chain still restores the state at its
// barrier (run with -race for the scribbling and the race detector).
func TestChangelogsWrittenWhileTheWorkerWritesRestoreExactly(t *testing.T) {
	defer func(c int) { deltaChunk = c }(deltaChunk)
	deltaChunk = 64
	mem := vfs.NewMem()
	s := openCfg(t, Config{Dir: "/r/work", FS: mem})
	want := map[string]string{}
	write := func(n int) {
		for i := range 200 {
			k, v := fmt.Sprintf("k%03d", (i*7+n)%300), fmt.Sprintf("v%d-%d", n, i)
			set(t, s, k, v)
			want[k] = v
		}
	}
	type result struct {
		c   Chain
		err error
	}
	write(0)
	for n := 1; n <= 20; n++ {
		atBarrier := maps.Clone(want)
		p, err := s.Checkpoint(fullDir("/r", n), changelogPath("/r", n))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan result)
		go func() {
			c, err := p.Wait()
			done <- result{c, err}
		}()
		write(n) // while Wait writes the changelog
		r := <-done
		if r.err != nil {
			t.Fatalf("Wait %d: %v", n, r.err)
		}
		restored := openCfg(t, Config{Dir: fmt.Sprintf("/r/restore-%d", n), FS: mem, Restore: whole(r.c)})
		wantContents(t, restored, atBarrier)
		if err := restored.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s.streams < 20 {
		t.Errorf("%d streams over 20 barriers, want every changelog streamed", s.streams)
	}
}
