package parquetfile

import (
	"fmt"
	"testing"
)

// BenchmarkRowGroupOfOrders appends and flushes rows shaped like the
// bench's orders (bench/cmd/load): a unique string id, strings of 1M and
// 100k distinct values, a double, a status of a few values and a padding
// string; a row group per 200k rows, as a checkpoint of a fast writer
// makes. It reports ns per row and the bytes per row of the file.
func BenchmarkRowGroupOfOrders(b *testing.B) {
	s := Schema{Columns: []Column{
		{Name: "id", Type: TypeString}, {Name: "u", Type: TypeString}, {Name: "h", Type: TypeString},
		{Name: "amount", Type: TypeDouble}, {Name: "status", Type: TypeString}, {Name: "p", Type: TypeString},
	}, Compression: CompressionZstd}
	const rows = 200_000
	values := make([][]byte, rows)
	statuses := []string{"paid", "shipped", "pending", "cancelled"}
	for i := range values {
		values[i] = fmt.Appendf(nil, `{"id":"r%010d","u":"u%07d","h":"h%05d","amount":%d.%02d,"status":%q,"p":"xyzxyzxyzxyzxyzxyz"}`,
			i, i%1_000_000, i%100_000, i%10000, i%100, statuses[i%4])
	}
	b.ResetTimer()
	var size int
	for range b.N {
		w, err := NewWriter(s)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range values {
			if err := w.Append(v); err != nil {
				b.Fatal(err)
			}
		}
		out, err := w.FlushRowGroup()
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	b.ReportMetric(float64(size)/rows, "B/row")
}
