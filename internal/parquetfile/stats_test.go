package parquetfile

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go/format"
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
			for _, e := range m.EncodingStats {
				if e.PageType == format.DataPage {
					pages += int(e.Count)
				}
			}
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

// TestByteArraysUseADictionaryUntilItOutgrowsItsPage checks the encodings
// of the file the test above reads back: a column of few distinct values
// ("name") keeps a dictionary in every row group; one of many ("meta", about
// 75 bytes of JSON in 3 rows of 4) outgrows its 1 MiB in the first row group,
// whose chunk then holds pages of both encodings, and goes on without a
// dictionary in the next.
func TestByteArraysUseADictionaryUntilItOutgrowsItsPage(t *testing.T) {
	file, n := pagesFile(t, Schema{Columns: allColumns}, 30_000, 5_000)
	f, rows := readGo(t, file, allColumns)
	checkRows(t, rows, 0, n)
	col := func(name string) int {
		for i, c := range allColumns {
			if c.Name == name {
				return i
			}
		}
		t.Fatalf("no column %q", name)
		return -1
	}
	type want struct {
		dict      bool
		dataPages []format.Encoding // of the data pages, in EncodingStats
		encodings []format.Encoding
	}
	plainRLE := []format.Encoding{format.Plain, format.RLE, format.RLEDictionary}
	cases := []struct {
		group int
		name  string
		want  want
	}{
		{0, "name", want{true, []format.Encoding{format.RLEDictionary}, plainRLE}},
		{1, "name", want{true, []format.Encoding{format.RLEDictionary}, plainRLE}},
		{0, "meta", want{true, []format.Encoding{format.DeltaByteArray, format.RLEDictionary},
			[]format.Encoding{format.Plain, format.RLE, format.DeltaByteArray, format.RLEDictionary}}},
		{1, "meta", want{false, []format.Encoding{format.DeltaByteArray}, []format.Encoding{format.RLE, format.DeltaByteArray}}},
	}
	for _, c := range cases {
		m := f.Metadata().RowGroups[c.group].Columns[col(c.name)].MetaData
		var got want
		got.dict = m.DictionaryPageOffset > 0
		for _, e := range m.EncodingStats {
			if e.PageType == format.DataPage {
				got.dataPages = append(got.dataPages, e.Encoding)
			} else if e.PageType != format.DictionaryPage || e.Encoding != format.Plain || e.Count != 1 || !got.dict {
				t.Errorf("row group %d column %q: page encoding stats %+v", c.group, c.name, m.EncodingStats)
			}
		}
		got.encodings = m.Encoding
		if got.dict != c.want.dict || !slices.Equal(got.dataPages, c.want.dataPages) || !slices.Equal(got.encodings, c.want.encodings) {
			t.Errorf("row group %d column %q: dictionary %v, data pages %v, encodings %v; want %v, %v, %v", c.group, c.name,
				got.dict, got.dataPages, got.encodings, c.want.dict, c.want.dataPages, c.want.encodings)
		}
		if got.dict && m.DataPageOffset <= m.DictionaryPageOffset {
			t.Errorf("row group %d column %q: data pages at %d, dictionary at %d", c.group, c.name, m.DataPageOffset, m.DictionaryPageOffset)
		}
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
