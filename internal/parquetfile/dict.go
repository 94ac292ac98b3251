package parquetfile

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// dictMaxBytes bounds the dictionary of a column chunk (its PLAIN page, 4
// bytes of length and the bytes of each distinct value), as parquet-mr's
// parquet.dictionary.page.size does with the same default. A column whose
// dictionary outgrows it goes on with DELTA_BYTE_ARRAY for the rest of the
// file: its values are too diverse for a dictionary to pay.
const dictMaxBytes = 1 << 20

// A column also gives up its dictionary when, after a page, the dictionary
// holds more than 1/dictMinRepeat of the bytes of the values it stands for:
// values that repeat less often than that compress better by their shared
// prefixes (DELTA_BYTE_ARRAY) than as indexes into a dictionary. The
// decision waits for dictSample bytes of values, so that a chunk of a few
// rows does not decide for the whole file.
const (
	dictMinRepeat = 4
	dictSample    = 64 << 10
)

// dict is the dictionary of a byte array column chunk: each distinct value
// once, in order of first appearance, and a hash table from value to index.
// A value then costs its hash and one comparison instead of its bytes in the
// page, and the compressor sees small integers instead of repeated strings
// (what parquet-mr and Arrow write by default for the same reason).
type dict struct {
	seed  maphash.Seed
	slots []int32  // entry+1, 0 empty; the length is a power of two
	hash  []uint64 // of each entry
	start []int32  // where each entry's bytes start in plain, after their length
	plain []byte   // the dictionary page's data: PLAIN encoded entries
}

// index returns the index of b, adding it if it is new. It returns -1 when b
// is new and the dictionary has no room for it (nothing is added then).
// added says b was new.
func (d *dict) index(b []byte) (i int32, added bool) {
	if d.slots == nil {
		d.seed = maphash.MakeSeed()
		d.slots = make([]int32, 1024)
	}
	h := maphash.Bytes(d.seed, b)
	mask := uint64(len(d.slots) - 1)
	for s := h & mask; ; s = (s + 1) & mask {
		e := d.slots[s] - 1
		if e < 0 {
			break
		}
		if d.hash[e] == h {
			at := d.start[e]
			l := int32(binary.LittleEndian.Uint32(d.plain[at-4:]))
			if bytes.Equal(d.plain[at:at+l], b) {
				return e, false
			}
		}
	}
	if len(d.plain)+4+len(b) > dictMaxBytes {
		return -1, false
	}
	e := int32(len(d.hash))
	d.plain = binary.LittleEndian.AppendUint32(d.plain, uint32(len(b)))
	d.start = append(d.start, int32(len(d.plain)))
	d.plain = append(d.plain, b...)
	d.hash = append(d.hash, h)
	if 2*len(d.hash) > len(d.slots) {
		d.grow()
	} else {
		d.put(e)
	}
	return e, true
}

func (d *dict) put(e int32) {
	mask := uint64(len(d.slots) - 1)
	s := d.hash[e] & mask
	for d.slots[s] != 0 {
		s = (s + 1) & mask
	}
	d.slots[s] = e + 1
}

// grow doubles the table and puts every entry back.
func (d *dict) grow() {
	d.slots = make([]int32, 2*len(d.slots))
	for e := range d.hash {
		d.put(int32(e))
	}
}

// pays says whether a dictionary of d, standing for values of unencoded
// bytes, is worth keeping.
func (d *dict) pays(unencoded int64) bool {
	return unencoded < dictSample || int64(len(d.plain))*dictMinRepeat <= unencoded
}

// size is the number of entries.
func (d *dict) size() int { return len(d.hash) }

// reset empties the dictionary for the next column chunk, keeping its memory.
func (d *dict) reset() {
	clear(d.slots)
	d.hash, d.start, d.plain = d.hash[:0], d.start[:0], d.plain[:0]
}
