package parquetfile

import (
	"encoding/json"
	"fmt"
	"testing"
)

var benchColumns = []Column{
	{Name: "id", Type: TypeInt64},
	{Name: "user", Type: TypeString},
	{Name: "amount", Type: TypeDouble, Nullable: true},
	{Name: "ts", Type: TypeTimestampMS},
}

// benchRecords are about 100 bytes, with two fields no column reads.
func benchRecords() [][]byte {
	recs := make([][]byte, 1024)
	for i := range recs {
		recs[i] = fmt.Appendf(nil, `{"id":%d,"user":"user-%04d","amount":%d.25,"ts":%d,"country":"DE","tags":["a","b"]}`,
			1_000_000+i, i%300, i*7, 1_700_000_000_000+int64(i)*37)
	}
	return recs
}

// BenchmarkAppend is the cost of one record, with a row group flushed
// every 100,000 records (encoding and zstd included).
func BenchmarkAppend(b *testing.B) {
	recs := benchRecords()
	w, err := NewWriter(Schema{Columns: benchColumns})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(recs[0])))
	b.ReportAllocs()
	var out int
	for i := 0; b.Loop(); i++ {
		if err := w.Append(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		if i%100_000 == 99_999 {
			chunk, err := w.FlushRowGroup()
			if err != nil {
				b.Fatal(err)
			}
			out += len(chunk)
		}
	}
}

// BenchmarkScan is the JSON scan and conversion alone: the records are not
// kept.
func BenchmarkScan(b *testing.B) {
	recs := benchRecords()
	w, err := NewWriter(Schema{Columns: benchColumns})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(recs[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec := recs[i%len(recs)]
		if err := w.scan.scan(rec); err != nil {
			b.Fatal(err)
		}
		for c, raw := range w.scan.raw {
			if raw == nil || raw[0] == 'n' {
				continue
			}
			if err := w.convert(c, raw, &w.cells[c]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkEncodingJSONMap is the reference the scanner replaces: decoding
// the same records into a map with encoding/json.
func BenchmarkEncodingJSONMap(b *testing.B) {
	recs := benchRecords()
	b.SetBytes(int64(len(recs[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var m map[string]any
		if err := json.Unmarshal(recs[i%len(recs)], &m); err != nil {
			b.Fatal(err)
		}
	}
}
