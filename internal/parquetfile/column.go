package parquetfile

import (
	"encoding/binary"
	"math"

	"github.com/parquet-go/parquet-go/format"

	"github.com/connector-dev/connector/internal/prefix"
)

// cell is one converted value of a record, held until every column of the
// record has converted (a bad record must leave the columns as they were).
type cell struct {
	b    []byte // byte array: points into the record value or Writer.scratch
	n    int64  // int32, int64, boolean (0 or 1); a float or double as float64 bits
	null bool
}

// column collects the values of one column: those of the page being filled,
// as they will be encoded, and the statistics of the row group. Values are
// appended in the form the page encoding wants them, so that a page is
// encoded without a pass over values:
//
//   - byte arrays: RLE_DICTIONARY while the column chunk's distinct values
//     fit a dictionary (dict.go), the index of each value; then, for the
//     rest of the file, DELTA_BYTE_ARRAY: the length of the prefix shared
//     with the previous value and the suffix. The values of a column often share
//     prefixes (ids, keys, timestamps as text), and then the compressor gets
//     only what changed: it is most of the encoding cost otherwise. The
//     page keeps whole values (the previous one and the page's bounds are
//     then where they are) and drops the prefixes when it is encoded.
//   - int32 and int64: DELTA_BINARY_PACKED, for the same reason (sequences,
//     timestamps).
//   - float and double: RLE_DICTIONARY while the chunk's distinct values fit
//     a dictionary, as byte arrays; then PLAIN (parquet-mr's default too).
//     Amounts, prices and measures often take few distinct values, and an
//     index of a few bits compresses better, and costs the compressor less,
//     than eight bytes of a double.
//   - boolean: PLAIN, bit-packed.
type column struct {
	typ      format.Type
	nullable bool

	// The page being filled.
	levels   []byte  // definition level (0 null, 1 value) of each row, when nullable
	rows     int     // rows of the page, null or not
	values   int     // non-null values of the page
	bytes    []byte  // byte array values, one after the other; PLAIN values (float, double, boolean)
	prefix   []int32 // byte arrays: shared prefix length of each value
	lens     []int32 // byte arrays: length of each value
	prev     int     // byte arrays: where the page's last value starts in bytes
	lo, hi   span    // byte arrays: the page's least and greatest value, in bytes
	idx      []int32 // byte arrays with a dictionary: the index of each value
	ints32   []int32
	ints64   []int64
	estimate int // plain-encoded size of the page, to know when it is full

	d       dict // the dictionary of the row group's chunk
	dictOff bool // a chunk outgrew the dictionary, and the file goes on without; or the type has none

	st colStats // of the row group
}

// span is where a value is in column.bytes.
type span struct{ start, end int }

// colStats are the statistics of a column chunk.
type colStats struct {
	has        bool // a non-null value was seen
	minI, maxI int64
	minF, maxF float64
	minB, maxB []byte
	nulls      int64
	unencoded  int64 // bytes of the byte array values; of a float or double chunk, of the values of its dictionary pages
}

func newColumn(typ string, nullable bool) *column {
	c := &column{nullable: nullable}
	switch typ {
	case TypeString, TypeBytes, TypeJSON:
		c.typ = format.ByteArray
	case TypeInt32, TypeDate:
		c.typ, c.dictOff = format.Int32, true
	case TypeInt64, TypeTimestampMS, TypeTimestampUS:
		c.typ, c.dictOff = format.Int64, true
	case TypeFloat:
		c.typ = format.Float
	case TypeDouble:
		c.typ = format.Double
	case TypeBoolean:
		c.typ, c.dictOff = format.Boolean, true
	default:
		panic("parquetfile: unchecked column type " + typ)
	}
	return c
}

// encoding is the encoding of the page the column is filling.
func (c *column) encoding() format.Encoding {
	if len(c.idx) > 0 {
		return format.RLEDictionary
	}
	return c.valueEncoding()
}

// valueEncoding is the encoding of the column's pages that are not
// dictionary indexes.
func (c *column) valueEncoding() format.Encoding {
	switch c.typ {
	case format.ByteArray:
		return format.DeltaByteArray
	case format.Int32, format.Int64:
		return format.DeltaBinaryPacked
	}
	return format.Plain
}

// add appends a converted value and returns its plain-encoded size (0 for a
// null), which is what Writer.Buffered counts. It returns false, having
// added nothing, when the value does not fit the chunk's dictionary: the
// column then goes on without one, and the caller encodes the page so far
// (all dictionary indexes) before it adds the value again.
func (c *column) add(v *cell) (int, bool) {
	dictIdx := int32(-1)
	if !v.null && !c.dictOff {
		var i int32
		var added bool
		switch c.typ {
		case format.ByteArray:
			i, added = c.d.index(v.b)
		case format.Double:
			i, added = c.d.indexWord(uint64(v.n), 8)
		default: // format.Float
			i, added = c.d.indexWord(uint64(math.Float32bits(float32(math.Float64frombits(uint64(v.n))))), 4)
		}
		if i < 0 {
			c.dictOff = true
			return 0, false
		}
		if added { // the chunk's bounds are its dictionary's
			if c.typ == format.ByteArray {
				c.st.minmaxBytes(v.b)
			} else {
				c.st.minmaxFloat(math.Float64frombits(uint64(v.n)))
			}
		}
		dictIdx = i
	}
	c.rows++
	if v.null {
		c.levels = append(c.levels, 0)
		c.st.nulls++
		c.estimate++ // a page of nulls fills too
		return 0, true
	}
	if c.nullable {
		c.levels = append(c.levels, 1)
	}
	n := 0
	switch c.typ {
	case format.ByteArray:
		n = 4 + len(v.b)
		if dictIdx < 0 {
			c.addBytes(v.b)
			break
		}
		c.idx = append(c.idx, dictIdx)
		c.st.unencoded += int64(len(v.b))
	case format.Int32:
		c.ints32 = append(c.ints32, int32(v.n))
		c.st.minmaxInt(v.n)
		n = 4
	case format.Int64:
		c.ints64 = append(c.ints64, v.n)
		c.st.minmaxInt(v.n)
		n = 8
	case format.Float:
		n = 4
		if dictIdx >= 0 {
			c.idx = append(c.idx, dictIdx)
			c.st.unencoded += 4 // what the dictionary stands for, to know if it pays
			break
		}
		f := math.Float64frombits(uint64(v.n))
		c.bytes = binary.LittleEndian.AppendUint32(c.bytes, math.Float32bits(float32(f)))
		c.st.minmaxFloat(f)
	case format.Double:
		n = 8
		if dictIdx >= 0 {
			c.idx = append(c.idx, dictIdx)
			c.st.unencoded += 8
			break
		}
		c.bytes = binary.LittleEndian.AppendUint64(c.bytes, uint64(v.n))
		c.st.minmaxFloat(math.Float64frombits(uint64(v.n)))
	case format.Boolean:
		if c.values%8 == 0 {
			c.bytes = append(c.bytes, 0)
		}
		c.bytes[len(c.bytes)-1] |= byte(v.n) << (c.values % 8)
		c.st.minmaxInt(v.n)
		n = 1
	}
	c.values++
	c.estimate += n
	return n, true
}

func (c *column) addBytes(b []byte) {
	start := len(c.bytes)
	prev := c.bytes[c.prev:start]
	p := prefix.Common(prev, b)
	c.bytes = append(c.bytes, b...)
	c.prefix = append(c.prefix, int32(p))
	c.lens = append(c.lens, int32(len(b)))
	c.st.unencoded += int64(len(b))
	prevStart := c.prev
	c.prev = start
	v := span{start, len(c.bytes)}
	if c.values == 0 {
		c.lo, c.hi = v, v
		return
	}
	if p == len(b) && p == len(prev) {
		return // the previous value again: the bounds stay
	}
	// The prefix b shares with the previous value says which of the two
	// is above; when the previous value is a bound, that decides (values
	// of increasing ids mostly stay above the last, the highest). A bound
	// is the previous value only if it is its span: an empty value takes
	// no bytes, so the value after it starts where it does.
	above := p == len(prev) || (p < len(b) && b[p] > prev[p])
	was := span{prevStart, start}
	switch {
	case above && c.hi == was:
		c.hi = v
	case !above && c.lo == was:
		c.lo = v
	case compareBytes(b, c.bytes[c.hi.start:c.hi.end]) > 0:
		c.hi = v
	case compareBytes(b, c.bytes[c.lo.start:c.lo.end]) < 0:
		c.lo = v
	}
}

// pageBounds folds the bounds of the page into those of the row group.
func (c *column) pageBounds() {
	if c.typ != format.ByteArray || len(c.prefix) == 0 {
		return // no values, or dictionary indexes (whose bounds are the dictionary's)
	}
	c.st.minmaxBytes(c.bytes[c.lo.start:c.lo.end])
	c.st.minmaxBytes(c.bytes[c.hi.start:c.hi.end])
}

func (s *colStats) minmaxBytes(b []byte) {
	if !s.has || compareBytes(b, s.minB) < 0 {
		s.minB = append(s.minB[:0], b...)
	}
	if !s.has || compareBytes(b, s.maxB) > 0 {
		s.maxB = append(s.maxB[:0], b...)
	}
	s.has = true
}

func (s *colStats) minmaxInt(v int64) {
	if !s.has {
		s.minI, s.maxI, s.has = v, v, true
		return
	}
	s.minI, s.maxI = min(s.minI, v), max(s.maxI, v)
}

// minmaxFloat: the values come from JSON numbers, never NaN.
func (s *colStats) minmaxFloat(f float64) {
	if !s.has {
		s.minF, s.maxF, s.has = f, f, true
		return
	}
	s.minF, s.maxF = min(s.minF, f), max(s.maxF, f)
}

// resetPage empties the page buffers, keeping their memory.
func (c *column) resetPage() {
	c.levels, c.bytes, c.prev = c.levels[:0], c.bytes[:0], 0
	c.prefix, c.lens, c.idx = c.prefix[:0], c.lens[:0], c.idx[:0]
	c.ints32, c.ints64 = c.ints32[:0], c.ints64[:0]
	c.rows, c.values, c.estimate = 0, 0, 0
}

// statistics returns the chunk statistics in the form of the footer: bounds
// PLAIN encoded (byte arrays without length), none longer than maxStatBytes.
func (c *column) statistics() format.Statistics {
	s := &c.st
	st := format.Statistics{NullCount: s.nulls}
	if !s.has {
		return st
	}
	switch c.typ {
	case format.ByteArray:
		// An empty bound (minB stays nil when the first value is empty)
		// is written as an empty value: a nil one is left out of the
		// footer, and the chunk then has no bounds. Hence no bytes.Clone,
		// which keeps nil nil.
		if max(len(s.minB), len(s.maxB)) <= maxStatBytes {
			st.MinValue = append(make([]byte, 0, len(s.minB)), s.minB...)
			st.MaxValue = append(make([]byte, 0, len(s.maxB)), s.maxB...)
		}
	case format.Int32:
		st.MinValue = binary.LittleEndian.AppendUint32(nil, uint32(s.minI))
		st.MaxValue = binary.LittleEndian.AppendUint32(nil, uint32(s.maxI))
	case format.Int64:
		st.MinValue = binary.LittleEndian.AppendUint64(nil, uint64(s.minI))
		st.MaxValue = binary.LittleEndian.AppendUint64(nil, uint64(s.maxI))
	case format.Boolean:
		st.MinValue, st.MaxValue = []byte{byte(s.minI)}, []byte{byte(s.maxI)}
	case format.Float, format.Double:
		// The format asks for a zero bound to be written as -0.0 for the
		// minimum and +0.0 for the maximum, whatever the sign seen.
		lo, hi := s.minF, s.maxF
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		if c.typ == format.Float {
			st.MinValue = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(lo)))
			st.MaxValue = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(hi)))
		} else {
			st.MinValue = binary.LittleEndian.AppendUint64(nil, math.Float64bits(lo))
			st.MaxValue = binary.LittleEndian.AppendUint64(nil, math.Float64bits(hi))
		}
	}
	return st
}

// compareBytes is bytes.Compare, inline: the values compared are mostly
// short, and decided by their first bytes.
func compareBytes(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x, y := binary.BigEndian.Uint64(a[i:]), binary.BigEndian.Uint64(b[i:]); x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}
