package parquetfile

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// pagesFile writes records 0..n-1 in row groups of the given sizes, large
// enough for some columns to take several pages.
func pagesFile(t testing.TB, s Schema, groups ...int) (file []byte, rows int) {
	w, err := NewWriter(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for range g {
			v, _ := record(rows)
			if err := w.Append(v); err != nil {
				t.Fatal(err)
			}
			rows++
		}
		b, err := w.FlushRowGroup()
		if err != nil {
			t.Fatal(err)
		}
		file = append(file, b...)
	}
	b, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	return append(file, b...), rows
}

func TestRowGroupsOfManyPagesHoldEveryRowAndTheirBounds(t *testing.T) {
	file, n := pagesFile(t, Schema{Columns: allColumns}, 30_000, 5_000)
	f, rows := readGo(t, file, allColumns)
	checkRows(t, rows, 0, n)
	md := f.Metadata()
	pages := 0
	first := 0
	for g, rg := range md.RowGroups {
		for c, cc := range rg.Columns {
			m := cc.MetaData
			pages += int(m.EncodingStats[0].Count)
			nulls, lo, hi := bounds(allColumns[c].Type, rows[first:first+int(rg.NumRows)], c)
			st := m.Statistics
			if st.NullCount != nulls || !bytes.Equal(st.MinValue, lo) || !bytes.Equal(st.MaxValue, hi) {
				t.Errorf("row group %d column %q: statistics %d nulls [%x, %x], want %d [%x, %x]",
					g, allColumns[c].Name, st.NullCount, st.MinValue, st.MaxValue, nulls, lo, hi)
			}
		}
		first += int(rg.NumRows)
	}
	if pages <= len(allColumns)*2 {
		t.Errorf("%d pages: the test wants columns of several pages", pages)
	}
}

// bounds are the null count and the PLAIN encoded least and greatest value
// of column c in rows (none for byte arrays longer than maxStatBytes).
func bounds(typ string, rows [][]any, c int) (nulls int64, lo, hi []byte) {
	var min, max any
	less := func(a, b any) bool {
		switch a := a.(type) {
		case string:
			return a < b.(string)
		case int64:
			return a < b.(int64)
		case int32:
			return a < b.(int32)
		case float32:
			return a < b.(float32)
		case float64:
			return a < b.(float64)
		case bool:
			return !a && b.(bool)
		}
		panic(a)
	}
	for _, r := range rows {
		v := r[c]
		switch {
		case v == nil:
			nulls++
		case min == nil:
			min, max = v, v
		case less(v, min):
			min = v
		case less(max, v):
			max = v
		}
	}
	enc := func(v any, zero float64) []byte {
		switch v := v.(type) {
		case string:
			if len(min.(string)) > maxStatBytes || len(max.(string)) > maxStatBytes {
				return nil
			}
			return []byte(v)
		case int64:
			return binary.LittleEndian.AppendUint64(nil, uint64(v))
		case int32:
			return binary.LittleEndian.AppendUint32(nil, uint32(v))
		case float32:
			if v == 0 {
				v = float32(zero)
			}
			return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
		case float64:
			if v == 0 {
				v = zero
			}
			return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
		case bool:
			if v {
				return []byte{1}
			}
			return []byte{0}
		}
		return nil
	}
	return nulls, enc(min, math.Copysign(0, -1)), enc(max, 0)
}
