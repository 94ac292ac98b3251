package file

import (
	"fmt"
	"github.com/connector-dev/connector/sink"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/sink/internal/filefmt"
)

type partState int

const (
	partOpen   partState = iota // takes records
	partRolled                  // full, aged, or rolled by a pre-commit; not yet synced
	partSynced                  // every byte written and fsynced, file closed
)

// part is one output file of a writer. Its bytes live in buf until written;
// off is how many are in the file (size() counts both). Writes go to offset
// off with WriteAt, so a write that failed half-way is simply repeated:
// nothing is lost or doubled.
//
// The writer's goroutine owns the part, except that the asynchronous rest of
// a pre-commit fsyncs the open part (syncOpen) while the writer goes on:
// mu orders that fsync with the writer creating or closing f.
type part struct {
	bucket string       // its directory under sink.path ("": sink.path itself)
	name   string       // in-progress path, relative to sink.path (in bucket)
	final  string       // committed path, set by the pre-commit that rolls it
	ff     filefmt.File // the records' bytes in the file's format
	opened time.Time
	used   uint64 // the writer's count of Writes at its last one (max_open_files)
	state  partState
	// resumed: the file exists (restored at a restart, cut back to off):
	// it is opened for writing, never created.
	resumed bool
	// dirSynced: the file's entry in its directory is durable.
	dirSynced bool
	mu        sync.Mutex
	f         vfs.File // nil before the first write and once synced
	buf       []byte
	off       int64
	// kept: the first kept bytes of buf are already in the file, before
	// off. A part written with direct I/O keeps the partial block its last
	// pre-commit wrote through the page cache, to write it again whole.
	kept int
	// direct: the file is written with direct I/O (direct.go), buf starts
	// at a block boundary of the file, after the chunk in flight, if any.
	direct   bool
	inflight *chunk
	spare    []byte // the buffer of the last chunk written, for the next
	// written is how far background write-back was last started (SyncTo),
	// so the fsync at pre-commit finds little dirty data left.
	written int64
	// dropped is how far the file's pages were last dropped from the page
	// cache (dropBehind).
	dropped int64
	// counted adds up the bytes flush writes (the File's Stats); nil
	// counts nothing.
	counted *atomic.Uint64
	// bufs gives direct buffers and takes them back when the part is
	// finished (nil: allocated afresh, dropped).
	bufs *bufferList
	// syncErr is the failure of the file's fsync, if one failed (sync).
	syncErr error
}

func (p *part) size() int64 {
	n := p.off + int64(len(p.buf)-p.kept)
	if p.inflight != nil {
		n += int64(len(p.inflight.buf))
	}
	return n
}

// flush writes buf to the file, creating it (and its bucket directory) on
// first use. With all false it may leave a partial block buffered (a part
// written with direct I/O); with all true every byte is in the file after it.
func (p *part) flush(s *File, all bool) error {
	if len(p.buf) == p.kept && p.inflight == nil {
		return nil
	}
	if p.f == nil {
		var f vfs.File
		var err error
		if p.resumed {
			f, err = s.fs.OpenReadWrite(s.path(p.name), "sink-file")
		} else if err = s.makeBucket(p.bucket); err == nil {
			f, err = s.fs.Create(s.path(p.name), "sink-file")
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", p.name, err)
		}
		// Direct I/O needs buf to start at a block of the file: a new
		// file's offset 0. A resumed part (rare: after a restart) stays
		// buffered.
		p.direct = !p.resumed && !s.noDirect && setDirect(f, true)
		if p.direct {
			p.alignBuf() // before it grows further by appends
		}
		p.resumed = true // a retry after a failed write must not truncate it
		p.mu.Lock()
		p.f = f
		p.mu.Unlock()
	}
	var err error
	if p.direct {
		err = p.writeDirect(all)
	} else {
		err = p.writeBuffered()
		p.startWriteBack()
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p.name, err)
	}
	if len(p.buf) == 0 && cap(p.buf) > max(4*fileBufferSize, directBufferCap) {
		p.buf = nil // give back memory grown while the disk failed
	}
	return nil
}

// writeBuffered writes buf through the page cache and drops what it wrote
// from buf. buf starts kept bytes before off: they are already in the file
// and are written again, unchanged.
func (p *part) writeBuffered() error {
	w, err := p.f.WriteAt(p.buf, p.off-int64(p.kept))
	p.consume(w)
	return err
}

// consume records that the first w bytes of buf are in the file and drops
// them from buf.
func (p *part) consume(w int) {
	p.advance(w)
	p.buf = p.buf[:copy(p.buf, p.buf[w:])]
}

// advance records that w bytes from where buf starts in the file (kept
// before off) are in the file.
func (p *part) advance(w int) {
	end := p.off - int64(p.kept) + int64(w)
	if end > p.off {
		if p.counted != nil {
			p.counted.Add(uint64(end - p.off))
		}
		p.off = end
	}
	p.kept = int(p.off - end)
}

// writeBackEvery is how much a part grows between two starts of background
// write-back.
const writeBackEvery = 4 << 20

// startWriteBack asks the OS to start writing the part's data to disk
// (sync_file_range on Linux, without waiting for earlier write-back; SyncTo
// elsewhere), keeping the last MiB dirty because it may still be rewritten
// by the page cache. It guarantees nothing: durability comes from the fsync
// in finish, which then has little left to do, so a checkpoint's pre-commit
// stays short (bench/RESULTS.md, "Design measurements"). An error here is
// left to that fsync.
func (p *part) startWriteBack() {
	to := p.off - 1<<20
	if to-p.written < writeBackEvery {
		return
	}
	if startWriteBackRange(p.f, p.written, to-p.written) {
		p.written = to
		p.dropBehind()
		return
	}
	if _, err := p.f.SyncTo(to); err == nil {
		p.written = to
	}
}

// dropBehindLag is how far behind the start of write-back the part's pages
// are dropped from the page cache: long enough for most of them to have
// reached the disk by then (the drop skips any that have not).
const dropBehindLag = 16 << 20

// dropBehind drops from the page cache the pages of the part that write-back
// was started on at least dropBehindLag ago (posix_fadvise DONTNEED, which
// skips dirty pages and pages still being written, and never waits). A sink
// does not read its output back, and the pages it frees are the ones its next
// writes reuse, still mapped: on the benchmark's virtual machine a written GB
// cost 0.5 CPU s that way against 0.6-2.5 when the page cache kept growing
// (bench/RESULTS.md, "Design measurements"). Durability still comes from the
// fsyncs; an error here changes nothing and is ignored.
func (p *part) dropBehind() {
	to := p.written - dropBehindLag
	if to-p.dropped < writeBackEvery {
		return
	}
	dropCachedRange(p.f, p.dropped, to-p.dropped)
	p.dropped = to
}

// finish writes what is buffered, fsyncs and closes the file. On error the
// part keeps its state and finish may be called again.
func (p *part) finish(s *File) error {
	if p.state >= partSynced {
		return nil
	}
	if err := p.flush(s, true); err != nil {
		return err
	}
	if p.inflight == nil { // always, after a flush of all
		p.bufs.put(p.buf)
		p.bufs.put(p.spare)
	}
	p.buf, p.kept, p.spare = nil, 0, nil // the tail a direct part kept is in the file
	if p.f == nil {
		p.state = partSynced // resumed, cut back and durable, never written since
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.sync(); err != nil {
		return err
	}
	// All of it is on the disk now: dropped from the start, for the pages
	// an earlier dropBehind skipped while they were dirty or being written
	// (a slow disk under load left a third of a part cached that way).
	dropCachedRange(p.f, 0, 0)
	err := p.f.Close()
	p.f = nil
	p.state = partSynced
	if err != nil {
		// The data is durable; only the descriptor's release failed.
		return fmt.Errorf("close %s: %w", p.name, err)
	}
	return nil
}

// syncOpen fsyncs the file of the open part, making every byte written to
// it before the call durable; a file closed meanwhile was fsynced by its
// finish. It may run on another goroutine than the writer's.
func (p *part) syncOpen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return nil
	}
	return p.sync()
}

// sync fsyncs the part's file. A failed fsync is sink.ErrLost, and stays
// so: after a write-back error Linux marks the pages clean (dropping them,
// on some file systems), so a later fsync that succeeds says nothing of
// the bytes written before it. The task fails, and the restart cuts the
// file back to the size the restored checkpoint recorded and writes the
// rest again from the source. Called with mu held.
func (p *part) sync() error {
	if p.syncErr == nil {
		if err := p.f.Sync(); err != nil {
			p.syncErr = fmt.Errorf("%w: sync %s: %w (a failed fsync leaves the written bytes unknown: they are written again from the last checkpoint)", sink.ErrLost, p.name, err)
		}
	}
	return p.syncErr
}

// abandon closes the file, if open, without syncing.
func (p *part) abandon() error {
	p.waitDirect()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}
