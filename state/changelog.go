package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/internal/keygroup"
	"github.com/connector-dev/connector/internal/prefix"
)

// delta is the writes made between two barriers, encoded as they come in
// the changelog's entry format, so that a barrier only sets the buffer
// aside and its file is written as is. A key written twice is in it twice;
// the later entry wins on restore.
//
// The encoding is kept in chunks of deltaChunk bytes, filled one after the
// other, not in one slice: a slice of megabytes that outgrew its capacity
// was copied whole, holding up the write that made it grow, and the
// records behind it, 10-16 ms at a few MB (a dedup's checkpoint waited for
// them). A chunk once full is handed to the delta's stream (stream.go),
// which writes it and recycles it: a delta holds only what was not
// written yet, whatever the interval between barriers.
type delta struct {
	chunks [][]byte    // the encoding not handed to a stream, in order; only the last one is filling
	pool   chan []byte // empty chunks (of written deltas)
	handed int64       // bytes at the start of the encoding handed to a stream
	size   int64       // bytes encoded, handed or not
	crc    uint32      // CRC-32C of the header and the encoding, up to the filling chunk
	n      int         // entries
	prev   []byte      // the last entry's key: the next one stores only what differs
	head   []byte      // scratch: the entry being added, encoded
}

// deltaChunk is the size of a delta's chunks, and so what a stream writes
// at a time (it syncs every syncChunks of them). A worker holds the chunk
// it fills, those its stream has not written yet and its pool's
// (poolChunks): of 1 MiB, 6 MB of the Go heap's 27 MB live in two workers
// of bench/'s dedup over 1M keys, which the collector's room (GOGC)
// widens further (bench/RESULTS.md, "2026-12-07, 20:55").
var deltaChunk = 256 << 10 // a variable for tests

// poolChunks is how many empty chunks a Store keeps for its deltas.
const poolChunks = 4

// newDelta returns an empty delta of a changelog of max parallelism maxPar
// whose chunks come from pool and go back to it (see recycle).
func newDelta(pool chan []byte, maxPar int) *delta {
	return &delta{pool: pool, crc: crc32.Update(0, crcTable, header(maxPar))}
}

func (d *delta) set(kg uint16, key, value []byte) {
	e := d.entry(opSet, kg, key)
	e = binary.AppendUvarint(e, uint64(len(value)))
	d.head = append(e, value...)
	d.write(d.head)
}

func (d *delta) del(kg uint16, key []byte) {
	d.head = d.entry(opDelete, kg, key)
	d.write(d.head)
}

// entry encodes the start of an entry for key in key group kg, in d.head's
// memory. The key group is written as is and the key prefix-compressed
// against the previous entry's: consecutive writes are of unrelated key
// groups, while the keys (a transform's namespace, "transform/dedup/0/...",
// then often ids written in order) mostly share their beginning. The entry
// does not depend on the database's key layout (keys.go).
func (d *delta) entry(op byte, kg uint16, rest []byte) []byte {
	shared := prefix.Common(rest, d.prev)
	h := append(d.head[:0], op)
	h = binary.BigEndian.AppendUint16(h, kg)
	h = binary.AppendUvarint(h, uint64(shared))
	h = binary.AppendUvarint(h, uint64(len(rest)-shared))
	h = append(h, rest[shared:]...)
	d.prev = append(d.prev[:0], rest...)
	d.n++
	return h
}

// write appends b to the encoding, starting chunks as they fill.
func (d *delta) write(b []byte) {
	d.size += int64(len(b))
	if last := len(d.chunks) - 1; last >= 0 && cap(d.chunks[last])-len(d.chunks[last]) >= len(b) {
		d.chunks[last] = append(d.chunks[last], b...)
		return
	}
	for len(b) > 0 {
		last := len(d.chunks) - 1
		if last < 0 || len(d.chunks[last]) == cap(d.chunks[last]) {
			if last >= 0 {
				d.crc = crc32.Update(d.crc, crcTable, d.chunks[last])
			}
			d.chunks = append(d.chunks, d.newChunk())
			last++
		}
		c := d.chunks[last]
		n := min(len(b), cap(c)-len(c))
		d.chunks[last] = append(c, b[:n]...)
		b = b[n:]
	}
}

func (d *delta) newChunk() []byte {
	select {
	case c := <-d.pool:
		if cap(c) == deltaChunk {
			return c[:0]
		}
	default:
	}
	return make([]byte, 0, deltaChunk)
}

// recycle gives chunk c back to the pool once it was written (or never
// will be), if the pool has room.
func recycle(pool chan []byte, c []byte) {
	select {
	case pool <- c:
	default:
	}
}

func (d *delta) bytes() int64 { return d.size }

// full hands over the chunks that are full (all but the filling one): the
// caller (a stream) writes them and recycles them.
func (d *delta) full() [][]byte {
	k := len(d.chunks) - 1
	if k <= 0 {
		return nil
	}
	out := slices.Clone(d.chunks[:k])
	for _, c := range out {
		d.handed += int64(len(c))
	}
	d.chunks = append(d.chunks[:0], d.chunks[k])
	clear(d.chunks[1 : k+1])
	return out
}

// trailer returns the changelog's trailer for d, whose chunks must all be
// full but the last.
func (d *delta) trailer() []byte {
	crc := d.crc
	if k := len(d.chunks); k > 0 {
		crc = crc32.Update(crc, crcTable, d.chunks[k-1])
	}
	t := binary.BigEndian.AppendUint64(make([]byte, 0, changelogTrailer), uint64(d.n))
	crc = crc32.Update(crc, crcTable, t)
	return binary.BigEndian.AppendUint32(t, crc)
}

// A changelog file holds one delta:
//
//	"PBCL" 0x03                                          magic, format version
//	uint16 max parallelism                               big-endian
//	{ op: 0x01 set | 0x02 delete,                        each entry
//	  uint16 key group,                                  big-endian
//	  uvarint shared, uvarint len, rest[shared:]         the key after its key
//	                                                     group (keys.go): the
//	                                                     first shared bytes are
//	                                                     the previous entry's
//	  (set only) uvarint len, value }
//	uint64 entry count, uint32 CRC-32C of all before it  big-endian trailer
//
// A file that is cut short or altered fails its trailer check: a restore
// refuses it rather than load part of a delta. Earlier formats (1: keys
// without key groups; 2: whole keys prefix-compressed) are refused.
const (
	changelogMagic   = "PBCL"
	changelogVersion = 3
	changelogHeader  = len(changelogMagic) + 1 + 2
	changelogTrailer = 12
	opSet, opDelete  = 1, 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// header returns a changelog's header for max parallelism maxPar.
func header(maxPar int) []byte {
	h := append([]byte(changelogMagic), changelogVersion)
	return binary.BigEndian.AppendUint16(h, uint16(maxPar))
}

// writeChangelog writes d, a delta of a Store with max parallelism maxPar
// that no stream took chunks of, whole to path durably: the file is synced,
// then its directory (which must exist) and that one's parent (the
// directory may be new), so that path survives a crash once it returns
// nil. On error what it wrote is left for the caller to release. Either
// way d's chunks go back to its pool.
func writeChangelog(fs vfs.FS, path string, maxPar int, d *delta) (size int64, err error) {
	if d.handed > 0 {
		return 0, fmt.Errorf("write changelog %s: %d bytes of it were handed to a stream", path, d.handed)
	}
	defer func() {
		for _, c := range d.chunks {
			recycle(d.pool, c)
		}
		d.chunks = nil
	}()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("create changelog %s: %w", path, err)
	}
	h := header(maxPar)
	trailer := d.trailer() // before the writes: a vfs.File may scribble on what it wrote
	for _, b := range slices.Concat([][]byte{h}, d.chunks, [][]byte{trailer}) {
		if err == nil {
			_, err = f.Write(b)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("write changelog %s: %w", path, err)
	}
	// The directory's sync is cheap once the file's committed the journal.
	for _, dir := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		if err = fsutil.SyncDir(fs, dir); err != nil {
			return 0, fmt.Errorf("write changelog %s: %w", path, err)
		}
	}
	return int64(len(h)) + d.size + int64(len(trailer)), nil
}

var errBadChangelog = errors.New("not a complete changelog")

// applyChangelog reads the changelog at path, which must have been written
// with max parallelism maxPar, and writes its entries of the key groups in
// keep into db (unsynced, as every write of a Store). It returns the file's
// size.
func applyChangelog(fs vfs.FS, path string, db *pebble.DB, maxPar int, keep keygroup.Range) (int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open changelog: %w", err)
	}
	buf, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return 0, fmt.Errorf("read changelog %s: %w", path, err)
	}
	// The trailer's checksum covers everything before it in every format.
	n := len(buf)
	if n < len(changelogMagic)+1+changelogTrailer || !bytes.HasPrefix(buf, []byte(changelogMagic)) ||
		crc32.Checksum(buf[:n-4], crcTable) != binary.BigEndian.Uint32(buf[n-4:]) {
		return 0, fmt.Errorf("changelog %s (%d bytes): %w (bad magic or checksum)", path, n, errBadChangelog)
	}
	if v := buf[len(changelogMagic)]; v != changelogVersion {
		return 0, fmt.Errorf("%w: changelog %s has format %d, not %d (keys in key groups, compressed after them)", ErrIncompatible, path, v, changelogVersion)
	}
	if n < changelogHeader+changelogTrailer {
		return 0, fmt.Errorf("changelog %s (%d bytes): %w (no header)", path, n, errBadChangelog)
	}
	if got := int(binary.BigEndian.Uint16(buf[changelogHeader-2:])); got != maxPar {
		return 0, fmt.Errorf("%w: changelog %s was written with max parallelism %d, not %d", ErrIncompatible, path, got, maxPar)
	}
	want := binary.BigEndian.Uint64(buf[n-changelogTrailer:])
	b := db.NewBatch()
	defer b.Close()
	var (
		count uint64
		key   []byte // the entry's key, after its key group
		pk    []byte // its Pebble key
	)
	for p := buf[changelogHeader : n-changelogTrailer]; len(p) > 0; count++ {
		op := p[0]
		ok := len(p) > 1+kgLen
		var (
			shared uint64
			w      int
		)
		if ok {
			shared, w = binary.Uvarint(p[1+kgLen:])
			ok = w > 0 && shared <= uint64(len(key))
		}
		var suffix, rest []byte
		if ok {
			suffix, rest, ok = lengthPrefixed(p[1+kgLen+w:])
		}
		var kg int
		if ok {
			kg = int(binary.BigEndian.Uint16(p[1:]))
			key = append(key[:shared], suffix...)
			pk = appendKey(pk[:0], uint16(kg), key)
		}
		switch {
		case ok && op == opDelete:
			if keep.Contains(kg) {
				err = b.Delete(pk, nil)
			}
		case ok && op == opSet:
			var value []byte
			if value, rest, ok = lengthPrefixed(rest); ok && keep.Contains(kg) {
				err = b.Set(pk, value, nil)
			}
		default:
			ok = false
		}
		if !ok {
			return 0, fmt.Errorf("changelog %s: %w (bad entry %d)", path, errBadChangelog, count)
		}
		if err != nil {
			return 0, fmt.Errorf("changelog %s: %w", path, err)
		}
		p = rest
	}
	if count != want {
		return 0, fmt.Errorf("changelog %s: %w (%d entries, trailer says %d)", path, errBadChangelog, count, want)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, fmt.Errorf("apply changelog %s: %w", path, err)
	}
	return int64(n), nil
}

func lengthPrefixed(p []byte) (field, rest []byte, ok bool) {
	l, n := binary.Uvarint(p)
	if n <= 0 || uint64(len(p)-n) < l {
		return nil, nil, false
	}
	return p[n : n+int(l)], p[n+int(l):], true
}
