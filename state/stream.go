package state

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/fsutil"
)

// A changelog is written while its delta fills, not only at its barrier.
// Once a delta fills its first chunk (deltaChunk bytes), a stream writes it
// to a file of its own (beside the working directory, a name of its own) on
// another goroutine, and so every further chunk, syncing the file every
// syncChunks chunks; the barrier's Wait then writes only the last chunk and
// the trailer, syncs what is left, and renames the file to the changelog's
// path (copies it, when the checkpoints are on another filesystem). At a
// million state writes a second a delta is several MB a second, and writing
// and syncing all of it at the barrier was most of a stateful checkpoint's
// time.
//
// A written chunk is not kept: it goes back to the Store's pool for the
// next one. So a worker holds the chunk it fills and those its streams have
// not written yet (at most streamQueue each; a few while the disk keeps
// up), and the pool's, not an interval's writes: two workers of a dedup
// over 1M keys held 40 MB of deltas, a second of writes, a third of the
// heap in use; 6 MB in chunks of 1 MiB, 1.5 MB in chunks of 256 KiB. The
// price is the fallback: a stream that fails cannot be written again from
// memory. A failure the Store sees before the barrier drops the delta, and
// the barrier takes a full snapshot instead; one at the barrier's Wait
// fails the checkpoint, like a changelog that could not be written, and the
// next barrier takes a full snapshot, which holds every write
// (incremental.go, settle). A stream's file is never handed out, and Open
// removes what a crash left of one.

// streamQueue is how many chunks may wait for the stream's goroutine; a
// worker that writes state faster than the disk takes it waits. 16 MiB of
// chunks, as when they were 16 of 1 MiB: what a worker writes while the
// disk stalls (a second of a dedup's writes) before it waits; held only
// then.
const streamQueue = 64

// syncChunks is how many chunks a stream writes between two syncs: a MiB
// of 256 KiB chunks, as many syncs as when a chunk was a MiB (a sync a
// chunk of 256 KiB was four times the syncs for the same bytes).
const syncChunks = 4

// stream writes one delta's changelog under a temporary name. Owned by the
// Store until the barrier, then by the Pending; its goroutine writes.
type stream struct {
	fs   vfs.FS
	temp string
	pool chan []byte // where written chunks go
	size int         // a chunk's capacity (the trailer is not one)
	ch   chan []byte
	done chan struct{}
	f    vfs.File // the goroutine's until done
	err  error    // the goroutine's first error; read after done

	failed  atomic.Bool // the goroutine met an error: the stream is of no use
	stopped atomic.Bool // aborted: the goroutine writes nothing more
}

// streamPrefix is the start of the temporary names of the streams of the
// Stores whose working directory is dir.
func streamPrefix(dir string) string { return filepath.Clean(dir) + ".changelog-" }

// opens counts the Stores opened by the process, for openName.
var opens atomic.Uint64

// openName is an Open's part of the names of its Store's streams, after
// streamPrefix: no two Opens of one directory share a name, within a
// process or across restarts. With names of their own, a Pending of a
// closed Store that is still in Wait while the next Store of its directory
// opens (Open removes every stream file of the directory) finds its file
// gone and fails; with the names that restarted at 1 at each Open, its
// rename took the new Store's stream under way and called it a complete
// changelog.
func openName() string {
	return strconv.FormatInt(time.Now().UnixNano(), 36) + "." + strconv.FormatUint(opens.Add(1), 36)
}

// startStream starts a stream into temp, whose first write is the header of
// a changelog of max parallelism maxPar.
func startStream(fs vfs.FS, temp string, maxPar int, pool chan []byte) *stream {
	st := &stream{fs: fs, temp: temp, pool: pool, size: deltaChunk, ch: make(chan []byte, streamQueue), done: make(chan struct{})}
	go st.run(header(maxPar))
	return st
}

func (st *stream) run(head []byte) {
	defer close(st.done)
	st.f, st.err = st.fs.Create(st.temp, vfs.WriteCategoryUnspecified)
	if st.err == nil {
		_, st.err = st.f.Write(head)
	}
	st.failed.Store(st.err != nil)
	unsynced := 0
	for b := range st.ch {
		if st.err == nil && !st.stopped.Load() {
			if _, st.err = st.f.Write(b); st.err == nil {
				if unsynced++; unsynced == syncChunks {
					st.err, unsynced = st.f.SyncData(), 0
				}
			}
			st.failed.Store(st.err != nil)
		}
		if cap(b) == st.size {
			recycle(st.pool, b) // written, or never to be: the sender must not block
		}
	}
}

// send hands d's full chunks to the goroutine, which owns them from then
// on (a vfs.File may scribble on what it was given to write: Pebble's
// MemFS does in race-enabled builds, to catch callers that reuse it).
func (st *stream) send(d *delta) {
	for _, c := range d.full() {
		st.ch <- c
	}
}

// finish writes the rest of d (its last chunk) and the trailer, syncs the
// file and renames (or copies) it to path, syncing path's directory and
// that one's parent (as writeChangelog). It returns the changelog's size.
// On error the temporary file is removed, and path is no changelog the
// Store hands out (the caller's Pending releases it).
func (st *stream) finish(d *delta, maxPar int, path string) (int64, error) {
	trailer := d.trailer() // before the chunk goes: the goroutine recycles it
	for _, c := range d.chunks {
		st.ch <- c
	}
	d.chunks = nil
	st.ch <- trailer
	close(st.ch)
	<-st.done
	err := st.err
	if st.f != nil {
		if err == nil {
			err = st.f.Sync()
		}
		if cerr := st.f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = st.fs.Rename(st.temp, path)
		if err != nil && crossDevice(err, st.fs, st.temp, path) {
			err = copyChangelog(st.fs, st.temp, path)
		}
	}
	for _, dir := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		if err == nil {
			err = fsutil.SyncDir(st.fs, dir)
		}
	}
	if err != nil {
		_ = st.fs.Remove(st.temp)
		return 0, fmt.Errorf("stream changelog %s: %w", path, err)
	}
	return int64(len(header(maxPar))) + d.size + int64(len(trailer)), nil
}

// crossDevice says whether the rename of file to path failed because they
// are on different filesystems: EXDEV, which Linux also gives between two
// mounts of one filesystem (two container volumes on a node's disk, whose
// device is the same), or two devices.
func crossDevice(err error, fs vfs.FS, file, path string) bool {
	if errors.Is(err, syscall.EXDEV) {
		return true
	}
	a, err := fs.Stat(file)
	if err != nil {
		return false
	}
	b, err := fs.Stat(filepath.Dir(path))
	return err == nil && a.DeviceID() != b.DeviceID()
}

// copyChangelog copies the stream's file to path, for checkpoints on
// another filesystem than the working directory (as full snapshots copy
// their sstables there: snapshot.go). The stream's file was synced; the
// copy is synced before it counts; a failed one is removed (and one a
// crash cut short is no changelog: its trailer is missing).
func copyChangelog(fs vfs.FS, from, path string) error {
	src, err := fs.Open(from, vfs.SequentialReadsOption)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fs.Remove(path)
		return err
	}
	_ = fs.Remove(from) // what is left of it goes at the next Open
	return nil
}

// abort stops the stream and removes its file.
func (st *stream) abort() {
	st.stopped.Store(true)
	close(st.ch)
	<-st.done
	if st.f != nil {
		_ = st.f.Close()
	}
	_ = st.fs.Remove(st.temp)
}

// feed hands the delta's full chunks to its stream, starting the stream at
// the first one. A stream that failed is of no use: the delta is dropped,
// and the next barrier takes a full snapshot instead of a checkpoint that
// would fail.
func (s *Store) feed() {
	if s.delta == nil || len(s.delta.chunks) < 2 {
		return
	}
	if s.stream == nil {
		s.streams++
		s.stream = startStream(s.fs, fmt.Sprintf("%s%s-%d", streamPrefix(s.dir), s.opened, s.streams), s.maxPar, s.pool)
	} else if s.stream.failed.Load() {
		s.dropFailedStream()
		return
	}
	s.stream.send(s.delta)
}

// dropFailedStream drops the delta whose stream failed, and the stream.
func (s *Store) dropFailedStream() {
	s.abortStream()
	s.delta = nil
	s.log.Warn().Msg("a changelog stream failed: the next checkpoint takes a full state snapshot")
}

// abortStream drops the current delta's stream, if any: the delta no longer
// begins with what it sent.
func (s *Store) abortStream() {
	if s.stream != nil {
		s.stream.abort()
		s.stream = nil
	}
}

// removeStreams removes what a crash left of the streams of the Store of
// working directory dir.
func removeStreams(fs vfs.FS, dir string) error {
	prefix := streamPrefix(dir)
	names, err := fs.List(filepath.Dir(prefix))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil // no parent directory: nothing left
	}
	if err != nil {
		return fmt.Errorf("list changelog streams: %w", err)
	}
	for _, name := range names {
		if strings.HasPrefix(name, filepath.Base(prefix)) {
			if err := fs.Remove(filepath.Join(filepath.Dir(prefix), name)); err != nil {
				return fmt.Errorf("remove changelog stream %s: %w", name, err)
			}
		}
	}
	return nil
}
