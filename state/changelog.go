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
// them).
type delta struct {
	chunks [][]byte // the encoding, in order; only the last one is filled
	free   [][]byte // empty chunks for it (a written delta's)
	size   int64    // bytes in chunks
	n      int      // entries
	prev   []byte   // the last entry's key: the next one stores only what differs
	head   []byte   // scratch: the entry being added, encoded
}

// deltaChunk is the size of a delta's chunks.
var deltaChunk = 1 << 20 // a variable for tests

// newDelta returns an empty delta that reuses spare's chunks.
func newDelta(spare *delta) *delta {
	d := &delta{}
	if spare != nil {
		for _, c := range spare.chunks {
			d.free = append(d.free, c[:0])
		}
		d.free = append(d.free, spare.free...)
	}
	return d
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
			var c []byte
			if k := len(d.free); k > 0 {
				c, d.free = d.free[k-1], d.free[:k-1]
			} else {
				c = make([]byte, 0, deltaChunk)
			}
			d.chunks = append(d.chunks, c)
			last++
		}
		c := d.chunks[last]
		n := min(len(b), cap(c)-len(c))
		d.chunks[last] = append(c, b[:n]...)
		b = b[n:]
	}
}

func (d *delta) bytes() int64 { return d.size }

// from returns the encoding after its first off bytes, as slices of the
// chunks (not copies).
func (d *delta) from(off int64) [][]byte {
	var out [][]byte
	for _, c := range d.chunks {
		if off >= int64(len(c)) {
			off -= int64(len(c))
			continue
		}
		out = append(out, c[off:])
		off = 0
	}
	return out
}

// mergeOlder puts older's entries before d's: what a failed changelog held
// is carried by the next one. Every delta's first entry shares no prefix,
// so the two encodings concatenate (the chunks too: a chunk that is not
// the last may be partly filled).
func (d *delta) mergeOlder(older *delta) {
	d.chunks = append(slices.Clip(older.chunks), d.chunks...)
	d.size += older.size
	if d.n == 0 {
		d.prev = append(d.prev[:0], older.prev...)
	}
	d.n += older.n
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

// trailer returns the changelog's trailer for d after header h.
func (d *delta) trailer(h []byte) []byte {
	t := binary.BigEndian.AppendUint64(make([]byte, 0, changelogTrailer), uint64(d.n))
	crc := crc32.Update(0, crcTable, h)
	for _, c := range d.chunks {
		crc = crc32.Update(crc, crcTable, c)
	}
	crc = crc32.Update(crc, crcTable, t)
	return binary.BigEndian.AppendUint32(t, crc)
}

// writeChangelog writes d, entries of a Store with max parallelism maxPar, to
// path durably: the file is synced, then its
// directory (which must exist) and that one's parent (the directory may be
// new), so that path survives a crash once it returns nil. On error what
// it wrote is left for the caller to release.
func writeChangelog(fs vfs.FS, path string, maxPar int, d *delta) (size int64, err error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("create changelog %s: %w", path, err)
	}
	h := header(maxPar)
	trailer := d.trailer(h)
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
