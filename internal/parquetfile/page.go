package parquetfile

import (
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// pageSize is the plain-encoded size at which a column's page is encoded
// and compressed (the last one of a row group is smaller). Arrow and
// parquet-mr write pages of this size; larger pages compress better, and
// the pages of the open row group stay in memory only compressed.
const pageSize = 1 << 20

var (
	deltaEncoding = &delta.BinaryPackedEncoding{}
	levelEncoding = &rle.Encoding{BitWidth: 1}
	dictEncoding  = &rle.DictionaryEncoding{}
)

// chunk is what a column has of the open row group: its encoded pages.
type chunk struct {
	dictPage     []byte // the dictionary page (header and data), encoded with the row group
	pages        []byte // data page headers and (compressed) page data
	uncompressed int64  // the same sizes with the page data uncompressed
	values       int64  // rows, null or not
	count        int32  // data pages
	dictPages    int32  // data pages of dictionary indexes
}

// pageEncoder encodes the pages of every column of a Writer, one at a
// time, in buffers it reuses.
type pageEncoder struct {
	codec compress.Codec
	body  []byte // levels and values, before compression
	tmp   []byte
	comp  []byte
	proto thrift.CompactProtocol
}

// flush encodes the page c is filling as a version 1 data page (what most
// readers expect: parquet-mr and Arrow write them by default) and appends
// it to ch.
func (e *pageEncoder) flush(c *column, ch *chunk) error {
	if c.rows == 0 {
		return nil
	}
	body := e.body[:0]
	var err error
	if c.nullable {
		// Version 1 pages prefix the levels with their length.
		if e.tmp, err = levelEncoding.EncodeLevels(e.tmp, c.levels); err != nil {
			return err
		}
		body = binary.LittleEndian.AppendUint32(body, uint32(len(e.tmp)))
		body = append(body, e.tmp...)
	}
	enc := c.encoding()
	switch {
	case enc == format.RLEDictionary:
		e.tmp, _ = dictEncoding.EncodeInt32(e.tmp, c.idx)
		body = append(body, e.tmp...)
		ch.dictPages++
		if !c.d.pays(c.st.unencoded) {
			c.dictOff = true // the next pages go without
		}
	case c.typ == format.ByteArray:
		c.pageBounds()
		e.tmp, _ = deltaEncoding.EncodeInt32(e.tmp, c.prefix)
		body = append(body, e.tmp...)
		// The suffix lengths, then the suffixes.
		for i, p := range c.prefix {
			c.lens[i] -= p
		}
		e.tmp, _ = deltaEncoding.EncodeInt32(e.tmp, c.lens)
		body = append(body, e.tmp...)
		body = appendSuffixes(body, c.bytes, c.prefix, c.lens)
	case c.typ == format.Int32:
		e.tmp, _ = deltaEncoding.EncodeInt32(e.tmp, c.ints32)
		body = append(body, e.tmp...)
	case c.typ == format.Int64:
		e.tmp, _ = deltaEncoding.EncodeInt64(e.tmp, c.ints64)
		body = append(body, e.tmp...)
	default:
		body = append(body, c.bytes...)
	}
	e.body = body
	ch.pages, err = e.appendPage(ch, ch.pages, body, format.PageHeader{
		Type: format.DataPage,
		DataPageHeader: thrift.New(format.DataPageHeader{
			NumValues:               int32(c.rows),
			Encoding:                enc,
			DefinitionLevelEncoding: format.RLE,
			RepetitionLevelEncoding: format.RLE,
			// No bounds: the chunk has them, and pages are large.
			Statistics: format.Statistics{NullCount: int64(c.rows - c.values)},
		}),
	})
	if err != nil {
		return err
	}
	ch.values += int64(c.rows)
	ch.count++
	c.resetPage()
	return nil
}

// flushDict encodes the dictionary of c's chunk, if it has one, as the
// chunk's dictionary page, once every data page of the chunk is encoded; it
// then empties the dictionary for the next chunk, or drops it if the column
// goes on without.
func (e *pageEncoder) flushDict(c *column, ch *chunk) error {
	if c.d.size() > 0 {
		var err error
		ch.dictPage, err = e.appendPage(ch, ch.dictPage[:0], c.d.plain, format.PageHeader{
			Type: format.DictionaryPage,
			DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{
				NumValues: int32(c.d.size()),
				Encoding:  format.Plain,
			}),
		})
		if err != nil {
			return err
		}
	}
	if c.dictOff {
		c.d = dict{}
	} else {
		c.d.reset()
	}
	return nil
}

// appendPage appends to dst the page of header h (whose sizes and CRC it
// sets) and data body, compressed, and counts its uncompressed size in ch.
func (e *pageEncoder) appendPage(ch *chunk, dst, body []byte, h format.PageHeader) ([]byte, error) {
	data := body
	if e.codec.CompressionCodec() != format.Uncompressed {
		var err error
		if e.comp, err = compressPage(e.codec, e.comp, body); err != nil {
			return dst, err
		}
		data = e.comp
	}
	h.UncompressedPageSize = int32(len(body))
	h.CompressedPageSize = int32(len(data))
	h.CRC = int32(crc32.ChecksumIEEE(data))
	hb, err := thrift.Marshal(&e.proto, &h)
	if err != nil {
		return dst, err
	}
	ch.uncompressed += int64(len(hb) + len(body))
	return append(append(dst, hb...), data...), nil
}

// metadata is the footer's description of chunk ch of column c, placed at
// offset at of the file.
func (e *pageEncoder) metadata(c *column, ch *chunk, name string, at int64) format.ColumnChunk {
	var encs []format.Encoding
	var stats []format.PageEncodingStats
	if n := ch.count - ch.dictPages; n > 0 || ch.dictPages == 0 {
		enc := c.valueEncoding()
		encs = append(encs, enc)
		stats = append(stats, format.PageEncodingStats{PageType: format.DataPage, Encoding: enc, Count: n})
	}
	m := format.ColumnMetaData{
		Type:                  c.typ,
		PathInSchema:          []string{name},
		Codec:                 e.codec.CompressionCodec(),
		NumValues:             ch.values,
		TotalUncompressedSize: ch.uncompressed,
		TotalCompressedSize:   int64(len(ch.dictPage) + len(ch.pages)),
		DataPageOffset:        at,
		Statistics:            c.statistics(),
	}
	if len(ch.dictPage) > 0 {
		m.DictionaryPageOffset = at
		m.DataPageOffset = at + int64(len(ch.dictPage))
		encs = append(encs, format.Plain)
		stats = append(stats, format.PageEncodingStats{PageType: format.DictionaryPage, Encoding: format.Plain, Count: 1})
	}
	if ch.dictPages > 0 {
		encs = append(encs, format.RLEDictionary)
		stats = append(stats, format.PageEncodingStats{PageType: format.DataPage, Encoding: format.RLEDictionary, Count: ch.dictPages})
	}
	if c.nullable {
		encs = append(encs, format.RLE)
	}
	slices.Sort(encs)
	m.Encoding = slices.Compact(encs)
	m.EncodingStats = stats
	if c.typ == format.ByteArray {
		m.SizeStatistics.UnencodedByteArrayDataBytes = c.st.unencoded
	}
	if c.nullable {
		m.SizeStatistics.DefinitionLevelHistogram = []int64{c.st.nulls, ch.values - c.st.nulls}
	}
	return format.ColumnChunk{MetaData: m}
}

// appendSuffixes appends to dst the suffixes of the values one after the
// other in b, each of which has a prefix of prefix[i] bytes and a suffix of
// suffix[i]. Most suffixes are short, and copied by words.
func appendSuffixes(dst, b []byte, prefix, suffix []int32) []byte {
	n := len(dst)
	for _, l := range suffix {
		n += int(l)
	}
	dst = slices.Grow(dst, n-len(dst)+8)
	out := dst[:n+8] // the last word may go past the suffixes
	w, r := len(dst), 0
	for i, p := range prefix {
		r += int(p)
		l := int(suffix[i])
		if l <= 8 && r+8 <= len(b) {
			binary.LittleEndian.PutUint64(out[w:], binary.LittleEndian.Uint64(b[r:]))
		} else {
			copy(out[w:], b[r:r+l])
		}
		w, r = w+l, r+l
	}
	return out[:n]
}
