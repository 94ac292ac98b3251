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
