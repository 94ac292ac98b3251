package file

import (
	"errors"
	"sync"
	"syscall"
	"unsafe"
)

// Direct I/O. A part's bytes are written once and never read back by the
// sink, so on Linux a new part is written with O_DIRECT: from the part's
// buffer straight to the disk, not copied into the page cache and later
// dropped from it (dropBehind, the fallback). On the benchmark's virtual
// machine that is 0.12-0.19 CPU s per written GB against 0.38-0.48 for
// buffered writes with drop-behind and 0.6-2.6 without
// (bench/cmd/writecost; bench/RESULTS.md, "Design measurements").
//
// A direct write returns when the disk has the data, so it runs on its own
// goroutine (one at a time per part: the in-flight chunk) while the writer
// fills the next buffer; the writer waits for it only when that buffer is
// full too, at a pre-commit, and when the part is finished or abandoned.
//
// Direct writes must start at a block boundary of the file, span whole
// blocks and come from memory aligned the same way (directAlign). A new
// file's buffer starts at offset 0 and only whole blocks are written, so
// the buffer always starts at a block boundary; the partial block at its
// end stays buffered. Where every byte must be in the file (a pre-commit,
// the part's finish), that partial block is written through the page cache
// (O_DIRECT cleared on the descriptor for the one write) and kept in buf
// (kept): the next direct write writes it again, whole, with what followed.
// Both writes put the same bytes at the same offsets, so whichever reaches
// the disk last, the file up to off is the same; the fsyncs that make
// bytes durable are unchanged.
//
// A file system that refuses O_DIRECT (tmpfs before Linux 6.6, in-memory
// file systems, non-Linux) leaves the part buffered, with write-back and
// drop-behind, and so does a direct write refused as invalid.

// directAlign is the alignment of direct writes' offsets, lengths and
// memory: the page size, a multiple of every logical block size in use.
const directAlign = 4096

// directChunk is how much a direct write takes at least (but at a
// pre-commit or finish): per written GB, 1 MiB writes cost 0.15 CPU s and
// ran at 1.6-1.8 GB/s on the benchmark's machine, 256 KiB writes 0.38 CPU s
// at 1.0 GB/s (bench/cmd/writecost --write).
const directChunk = 1 << 20

// directBufferCap is the capacity of a direct part's buffers: room for a
// chunk and one more record of ordinary size. A part buffers one chunk
// while the one before is being written, then waits for that one: the
// writer fills a chunk in 2 ms at 1 KB records and 12 ms at 100 B, the
// disk writes one in under 1 ms. Buffering two chunks (buffers of 2.25
// MiB) drained the 1 KB topic no faster and held 14 MiB more at the peak
// (bench/RESULTS.md, "2026-12-07, 12:40").
const directBufferCap = directChunk + fileBufferSize

// chunk is a direct write in flight: buf's bytes at the file offset where
// the part's buffer started when it was sent.
type chunk struct {
	buf  []byte
	done chan struct{}
	n    int   // set before done is closed
	err  error // set before done is closed
}

// writeDirect sends buf's whole blocks to be written with direct I/O and,
// with all, waits for them and writes the partial block after them through
// the page cache.
func (p *part) writeDirect(all bool) error {
	if !all && len(p.buf) < directChunk {
		return nil
	}
	if err := p.join(); err != nil { // the chunk before, if any
		return err
	}
	if n := len(p.buf) &^ (directAlign - 1); n > 0 && p.direct {
		p.send(n)
		if all {
			if err := p.join(); err != nil {
				return err
			}
		}
	}
	if !p.direct {
		return p.writeBuffered() // a write was refused: buffered now
	}
	if !all || len(p.buf) == p.kept {
		return nil
	}
	// The partial block: through the page cache, and kept in buf.
	if !setDirect(p.f, false) {
		return errors.New("clear O_DIRECT for the partial last block")
	}
	w, err := p.f.WriteAt(p.buf, p.off-int64(p.kept))
	p.direct = setDirect(p.f, true)
	if err != nil || w < len(p.buf) {
		return err // a retry writes the block again: buf is unchanged
	}
	tail := len(p.buf)
	p.consume(w)
	p.buf = p.buf[:tail] // keep the block's bytes, to write it whole next time
	p.kept = tail
	return nil
}

// send starts the direct write of buf's first n bytes (whole blocks) and
// moves the rest of buf to a buffer of its own.
func (p *part) send(n int) {
	p.alignBuf()
	c := &chunk{buf: p.buf[:n], done: make(chan struct{})}
	rest := p.buf[n:]
	next := p.spare
	p.spare = nil
	if cap(next) < len(rest)+fileBufferSize {
		next = p.bufs.get(cap(p.buf))
	}
	p.buf = append(next[:0], rest...)
	p.inflight = c
	f, off := p.f, p.off-int64(p.kept)
	go func() {
		c.n, c.err = f.WriteAt(c.buf, off)
		close(c.done)
	}()
}

// join waits for the chunk in flight and accounts for it. A chunk that was
// not written in full goes back in front of buf, for the next flush to
// write again; a write refused as invalid makes the part buffered.
func (p *part) join() error {
	c := p.inflight
	if c == nil {
		return nil
	}
	<-c.done
	p.inflight = nil
	w := c.n &^ (directAlign - 1)
	if c.err == nil && w == len(c.buf) {
		p.advance(w)
		p.spare = c.buf[:0]
		return nil
	}
	p.advance(w)
	back := alignedBuffer(len(c.buf) - w + len(p.buf) + fileBufferSize)[:0]
	back = append(back, c.buf[w:]...)
	p.buf = append(back, p.buf...)
	if errors.Is(c.err, syscall.EINVAL) && w == 0 {
		// Refused (an alignment this file system does not take): the
		// part is written through the page cache from now on.
		if p.direct = !setDirect(p.f, false); !p.direct {
			return nil
		}
	}
	if c.err == nil {
		c.err = errors.New("short direct write")
	}
	return c.err
}

// alignBuf moves buf to memory aligned for direct I/O if it is not (its
// first allocation, or a reallocation by a format's append), or to a
// buffer of directBufferCap if it is smaller (a new part's, grown by
// appends: large allocations are page-aligned, so it may be aligned).
func (p *part) alignBuf() {
	if isAligned(p.buf) && cap(p.buf) >= directBufferCap {
		return
	}
	p.buf = append(p.bufs.get(cap(p.buf)), p.buf...)
}

func isAligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directAlign == 0
}

// bufferList keeps the buffers of finished direct parts for the parts
// opened after them, at most two a writer (a part's buffer and its
// chunk's). Without it each new part grew its buffer by appends to a
// chunk, allocating, zeroing and copying about 7.6 MB, and then copied it
// to aligned memory; at 1 KB records a part rolls every 128 MiB (about 8
// a second here), and that was 3-4% of the drain's CPU (bench/RESULTS.md).
// A nil list keeps nothing. Safe for concurrent use: a part may finish on
// a pre-commit's goroutine.
type bufferList struct {
	mu   sync.Mutex
	max  int
	free [][]byte // aligned, capacity directBufferCap, empty
}

// get returns an empty aligned buffer of at least directBufferCap and n
// bytes.
func (l *bufferList) get(n int) []byte {
	if n <= directBufferCap && l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if k := len(l.free); k > 0 {
			b := l.free[k-1]
			l.free[k-1] = nil
			l.free = l.free[:k-1]
			return b
		}
	}
	return alignedBuffer(max(n, directBufferCap))[:0]
}

// put keeps b for the parts opened next, if it is one of their buffers
// and the list has room. The caller must hold no other reference to it,
// and no write may be reading it.
func (l *bufferList) put(b []byte) {
	if l == nil || cap(b) != directBufferCap || !isAligned(b) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) < l.max {
		l.free = append(l.free, b[:0])
	}
}

// alignedBuffer returns a buffer of n bytes whose memory starts at a
// multiple of directAlign.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(&b[0]))%directAlign)) % directAlign
	return b[skip : skip+n : skip+n]
}

// waitDirect waits for the part's chunk in flight, if any, before its file
// is closed. Its error is the next flush's.
func (p *part) waitDirect() {
	if p.inflight != nil {
		<-p.inflight.done
	}
}
