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
)

// chunk is what a column has of the open row group: its encoded pages.
type chunk struct {
	pages        []byte // page headers and (compressed) page data
	uncompressed int64  // the same size with the page data uncompressed
	values       int64  // rows, null or not
	count        int32  // pages
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
	switch c.typ {
	case format.ByteArray:
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
	case format.Int32:
		e.tmp, _ = deltaEncoding.EncodeInt32(e.tmp, c.ints32)
		body = append(body, e.tmp...)
	case format.Int64:
		e.tmp, _ = deltaEncoding.EncodeInt64(e.tmp, c.ints64)
		body = append(body, e.tmp...)
	default:
		body = append(body, c.bytes...)
	}
	e.body = body
	data := body
	if e.codec.CompressionCodec() != format.Uncompressed {
		if e.comp, err = compressPage(e.codec, e.comp, body); err != nil {
			return err
		}
		data = e.comp
	}
	h := format.PageHeader{
		Type:                 format.DataPage,
		UncompressedPageSize: int32(len(body)),
		CompressedPageSize:   int32(len(data)),
		CRC:                  int32(crc32.ChecksumIEEE(data)),
		DataPageHeader: thrift.New(format.DataPageHeader{
			NumValues:               int32(c.rows),
			Encoding:                c.encoding(),
			DefinitionLevelEncoding: format.RLE,
			RepetitionLevelEncoding: format.RLE,
			// No bounds: the chunk has them, and pages are large.
			Statistics: format.Statistics{NullCount: int64(c.rows - c.values)},
		}),
	}
	hb, err := thrift.Marshal(&e.proto, &h)
	if err != nil {
		return err
	}
	ch.pages = append(append(ch.pages, hb...), data...)
	ch.uncompressed += int64(len(hb) + len(body))
	ch.values += int64(c.rows)
	ch.count++
	c.resetPage()
	return nil
}

// metadata is the footer's description of chunk ch of column c, placed at
// offset at of the file.
func (e *pageEncoder) metadata(c *column, ch *chunk, name string, at int64) format.ColumnChunk {
	enc := c.encoding()
	encs := []format.Encoding{enc}
	if c.nullable {
		encs = append(encs, format.RLE)
	}
	slices.Sort(encs)
	m := format.ColumnMetaData{
		Type:                  c.typ,
		Encoding:              encs,
		PathInSchema:          []string{name},
		Codec:                 e.codec.CompressionCodec(),
		NumValues:             ch.values,
		TotalUncompressedSize: ch.uncompressed,
		TotalCompressedSize:   int64(len(ch.pages)),
		DataPageOffset:        at,
		Statistics:            c.statistics(),
		EncodingStats:         []format.PageEncodingStats{{PageType: format.DataPage, Encoding: enc, Count: ch.count}},
	}
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
