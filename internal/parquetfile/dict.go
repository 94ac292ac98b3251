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

// dict is the dictionary of a column chunk of byte arrays, floats or
// doubles: each distinct value once, in order of first appearance, and a
// hash table from value to index. A value then costs its hash and one
// comparison instead of its bytes in the page, and the compressor sees
// small integers instead of repeated strings or numbers (what parquet-mr
// and Arrow write by default for the same reason). A dictionary holds the
// values of one type only: byte arrays (index) or words (indexWord).
type dict struct {
	seed  maphash.Seed
	slots []int32  // entry+1, 0 empty; the length is a power of two
	hash  []uint64 // of each entry
	start []int32  // byte arrays: where each entry's bytes start in plain, after their length
	plain []byte   // the dictionary page's data: PLAIN encoded entries
	last  int32    // byte arrays: the entry index returned last, +1 (0: none)

	// Floats and doubles (indexWord): a table of the hashes of the words
	// (wordHash, 0 empty) and their entry indexes, and the entries.
	words []uint64
	ents  []int32
	n     int
}

// index returns the index of b, adding it if it is new. It returns -1 when b
// is new and the dictionary has no room for it (nothing is added then).
// added says b was new.
func (d *dict) index(b []byte) (i int32, added bool) {
	if d.slots == nil {
		d.seed = maphash.MakeSeed()
		d.slots = make([]int32, 1024)
	}
	// The value of the record before, again (a status, a country, a
	// type): no hash.
	if e := d.last - 1; e >= 0 {
		at := d.start[e]
		l := int32(binary.LittleEndian.Uint32(d.plain[at-4:]))
		if int(l) == len(b) && string(d.plain[at:at+l]) == string(b) {
			return e, false
		}
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
				d.last = e + 1
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
	d.last = e + 1
	if 2*len(d.hash) > len(d.slots) {
		d.grow()
	} else {
		d.put(e)
	}
	return e, true
}

// indexWord is index for a float or double, given as its PLAIN bits
// (width 4 or 8 bytes). The bits are the value: -0 and 0 are two entries,
// as they are two values to a reader.
//
// Its table is its own (words, ents): each slot holds the word's hash
// itself, so that a lookup reads one slot (and the entry index next to
// it) rather than a slot and then the entry's hash elsewhere: the table is
// read at random, and in a drain the records streaming through have
// evicted it from the cache.
func (d *dict) indexWord(bits uint64, width int) (i int32, added bool) {
	if d.words == nil {
		d.words, d.ents = make([]uint64, 1024), make([]int32, 1024)
	}
	h := wordHash(bits)
	mask := uint64(len(d.words) - 1)
	s := h & mask
	for ; d.words[s] != 0; s = (s + 1) & mask {
		if d.words[s] == h {
			return d.ents[s], false
		}
	}
	if len(d.plain)+width > dictMaxBytes {
		return -1, false
	}
	e := int32(d.n)
	d.n++
	if width == 4 {
		d.plain = binary.LittleEndian.AppendUint32(d.plain, uint32(bits))
	} else {
		d.plain = binary.LittleEndian.AppendUint64(d.plain, bits)
	}
	d.words[s], d.ents[s] = h, e
	if 4*d.n > 3*len(d.words) {
		d.growWords()
	}
	return e, true
}

// wordHash mixes the bits of a word one to one, so that equal hashes are
// equal words, and every bit of the hash depends on every bit of the word
// (murmur3's finalizer: xor-shifts and multiplications by odd numbers, each
// one to one). A table reads the low bits, and the doubles of a column
// often differ in the sign, the exponent and the high bits of the fraction
// only (small integers, halves, cents): a product alone leaves those out of
// the low bits and piles such values into one run of slots. Only the NaN
// wordNaN hashes to 0, which marks an empty slot (a JSON number is never
// NaN).
func wordHash(bits uint64) uint64 {
	h := bits ^ wordNaN
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

const wordNaN = 0x7ff8_0000_dead_beef

// growWords doubles the table of words and puts every slot back.
func (d *dict) growWords() {
	words, ents := d.words, d.ents
	d.words, d.ents = make([]uint64, 2*len(words)), make([]int32, 2*len(words))
	mask := uint64(len(d.words) - 1)
	for i, h := range words {
		if h == 0 {
			continue
		}
		s := h & mask
		for d.words[s] != 0 {
			s = (s + 1) & mask
		}
		d.words[s], d.ents[s] = h, ents[i]
	}
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
func (d *dict) size() int { return len(d.hash) + d.n }

// reset empties the dictionary for the next column chunk, keeping its memory.
func (d *dict) reset() {
	clear(d.slots)
	clear(d.words)
	d.hash, d.start, d.plain, d.last, d.n = d.hash[:0], d.start[:0], d.plain[:0], 0, 0
}
