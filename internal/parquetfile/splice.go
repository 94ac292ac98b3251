package parquetfile

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// magic opens and closes every Parquet file.
const magic = "PAR1"

// readFooter decodes the footer of a complete Parquet file and returns it
// with the offset where it starts.
func readFooter(file []byte) (*format.FileMetaData, int, error) {
	if len(file) < 12 || string(file[:4]) != magic || string(file[len(file)-4:]) != magic {
		return nil, 0, errors.New("not a Parquet file")
	}
	n := int(binary.LittleEndian.Uint32(file[len(file)-8:]))
	start := len(file) - 8 - n
	if n <= 0 || start < 4 {
		return nil, 0, fmt.Errorf("footer length %d does not fit a file of %d bytes", n, len(file))
	}
	md := new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), file[start:len(file)-8], md); err != nil {
		return nil, 0, fmt.Errorf("decode footer: %w", err)
	}
	return md, start, nil
}

// maxStatBytes bounds the min and max of a column chunk's statistics: a
// longer one (a long string) is dropped, as the format has no way to say that
// a bound was truncated, and the metadata of every row group is in the State.
const maxStatBytes = 64

// relocate takes a Parquet file of one row group (written by parquet-go) and
// appends to dst the column chunks of that row group placed at offset at of
// another file, with its metadata rewritten for that place.
//
// The page indexes (column and offset indexes) are dropped. Readers expect
// them in one section after every row group (parquet-go's reader fails on
// anything else), which would mean keeping them in the State until the
// footer; the row group statistics stay (but see maxStatBytes).
func relocate(dst, small []byte, at int64) ([]byte, format.RowGroup, error) {
	md, footerStart, err := readFooter(small)
	if err != nil {
		return nil, format.RowGroup{}, err
	}
	if len(md.RowGroups) != 1 {
		return nil, format.RowGroup{}, fmt.Errorf("want 1 row group, got %d", len(md.RowGroups))
	}
	rg := md.RowGroups[0]

	// The column chunks run from the magic to the first page index.
	dataEnd := int64(footerStart)
	for _, c := range rg.Columns {
		if c.ColumnIndexLength > 0 {
			dataEnd = min(dataEnd, c.ColumnIndexOffset)
		}
		if c.OffsetIndexLength > 0 {
			dataEnd = min(dataEnd, c.OffsetIndexOffset)
		}
	}
	shift := at - int64(len(magic))
	next := int64(len(magic))
	for i := range rg.Columns {
		c := &rg.Columns[i]
		m := &c.MetaData
		start := m.DataPageOffset
		if m.DictionaryPageOffset > 0 {
			start = m.DictionaryPageOffset
		}
		if start != next || start+m.TotalCompressedSize > dataEnd {
			return nil, format.RowGroup{}, fmt.Errorf("column chunk %d at [%d, +%d), want it at %d, before %d",
				i, start, m.TotalCompressedSize, next, dataEnd)
		}
		if m.BloomFilterOffset != 0 || m.IndexPageOffset != 0 || c.FilePath != "" {
			return nil, format.RowGroup{}, fmt.Errorf("column chunk %d has a bloom filter, index page or file path", i)
		}
		next = start + m.TotalCompressedSize
		m.DataPageOffset += shift
		if m.DictionaryPageOffset > 0 {
			m.DictionaryPageOffset += shift
		}
		if c.FileOffset > 0 {
			c.FileOffset += shift
		}
		c.ColumnIndexOffset, c.ColumnIndexLength = 0, 0
		c.OffsetIndexOffset, c.OffsetIndexLength = 0, 0
		if st := &m.Statistics; max(len(st.MinValue), len(st.MaxValue), len(st.Min), len(st.Max)) > maxStatBytes {
			st.MinValue, st.MaxValue, st.Min, st.Max = nil, nil, nil, nil
		}
	}
	if rg.FileOffset > 0 {
		rg.FileOffset += shift
	}
	return append(dst, small[len(magic):next]...), rg, nil
}

// extent is where a relocated row group's bytes start and end in the file.
func extent(rg *format.RowGroup) (start, end int64) {
	start = -1
	for i := range rg.Columns {
		c := &rg.Columns[i]
		m := &c.MetaData
		s := m.DataPageOffset
		if m.DictionaryPageOffset > 0 {
			s = m.DictionaryPageOffset
		}
		if start < 0 || s < start {
			start = s
		}
		end = max(end, s+m.TotalCompressedSize)
	}
	return start, end
}
