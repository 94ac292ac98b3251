package file

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

type partState int

const (
	partOpen    partState = iota // takes records
	partRolled                   // full or pre-committed, not yet synced
	partSynced                   // every byte written and fsynced, file closed
	partPending                  // renamed to its pending name
)

// part is one output file of a writer. Its bytes live in buf until written;
// off is how many are in the file. Writes go to offset off with WriteAt, so a
// write that failed half-way is simply repeated: nothing is lost or doubled.
type part struct {
	name   string // in-progress name
	seq    int    // the writer's part number, in both names
	final  string // committed name, set when renamed to pending
	opened time.Time
	state  partState
	f      vfs.File // nil before the first write and once synced
	buf    []byte
	off    int64
	// written is how far background write-back was last started (SyncTo),
	// so the fsync at pre-commit finds little dirty data left.
	written int64
	// counted adds up the bytes flush writes (the File's Stats); nil
	// counts nothing.
	counted *atomic.Uint64
}

func (p *part) size() int64 { return p.off + int64(len(p.buf)) }

// flush writes buf to the file, creating it on first use.
func (p *part) flush(fs vfs.FS, dir string) error {
	if len(p.buf) == 0 {
		return nil
	}
	if p.f == nil {
		f, err := fs.Create(fs.PathJoin(dir, p.name), "sink-file")
		if err != nil {
			return fmt.Errorf("create %s: %w", p.name, err)
		}
		p.f = f
	}
	n, err := p.f.WriteAt(p.buf, p.off)
	p.off += int64(n)
	if p.counted != nil {
		p.counted.Add(uint64(n))
	}
	p.buf = p.buf[:copy(p.buf, p.buf[n:])]
	if err != nil {
		return fmt.Errorf("write %s: %w", p.name, err)
	}
	if cap(p.buf) > 4*fileBufferSize {
		p.buf = nil // give back memory grown while the disk failed
	}
	p.startWriteBack()
	return nil
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
		return
	}
	if _, err := p.f.SyncTo(to); err == nil {
		p.written = to
	}
}

// finish writes what is buffered, fsyncs and closes the file. On error the
// part keeps its state and finish may be called again.
func (p *part) finish(fs vfs.FS, dir string) error {
	if p.state >= partSynced {
		return nil
	}
	if err := p.flush(fs, dir); err != nil {
		return err
	}
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", p.name, err)
	}
	err := p.f.Close()
	p.f = nil
	p.state = partSynced
	if err != nil {
		// The data is durable; only the descriptor's release failed.
		return fmt.Errorf("close %s: %w", p.name, err)
	}
	return nil
}

// abandon closes the file, if open, without syncing.
func (p *part) abandon() error {
	if p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}
