package parquetfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

// pagesFile writes records 0..n-1 in row groups of the given sizes, large
// enough for some columns to take several pages.
func pagesFile(t testing.TB, s Schema, groups ...int) (file []byte, rows int) {
	return groupsFile(t, s, func(i int) []byte { v, _ := record(i); return v }, groups...)
}

// groupsFile writes the values value(0..n-1) in row groups of the given
// sizes.
func groupsFile(t testing.TB, s Schema, value func(i int) []byte, groups ...int) (file []byte, rows int) {
	w, err := NewWriter(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for range g {
			if err := w.Append(value(rows)); err != nil {
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

// TestFloatsAndDoublesUseADictionaryWhileTheirValuesRepeat checks the
// encodings, values and bounds of float and double columns: one of 41
// values (-0 and 0 among them, which stay apart) and a nullable one of 7
// keep a dictionary in every row group; one whose every value is new fills
// its 1 MiB dictionary in the first row group, whose chunk then also holds
// PLAIN pages, and goes on PLAIN.
func TestFloatsAndDoublesUseADictionaryWhileTheirValuesRepeat(t *testing.T) {
	cols := []Column{
		{Name: "amount", Type: TypeDouble},
		{Name: "ratio", Type: TypeFloat, Nullable: true},
		{Name: "uniq", Type: TypeDouble},
	}
	value := func(i int) (amount float64, ratio any, uniq float64, rec []byte) {
		amount = float64(i%40-20) / 4
		text := strconv.FormatFloat(amount, 'f', -1, 64)
		if i%40 == 39 {
			amount, text = math.Copysign(0, -1), "-0.0"
		}
		ratioText := "null"
		if i%8 != 0 {
			r := float32(i%8) / 3
			ratio, ratioText = r, strconv.FormatFloat(float64(r), 'g', -1, 32)
		}
		uniq = float64(i)*1.25 + 0.5
		return amount, ratio, uniq, fmt.Appendf(nil, `{"amount":%s,"ratio":%s,"uniq":%s}`,
			text, ratioText, strconv.FormatFloat(uniq, 'g', -1, 64))
	}
	file, n := groupsFile(t, Schema{Columns: cols}, func(i int) []byte { _, _, _, rec := value(i); return rec }, 150_000, 20_000)
	f, rows := readGo(t, file, cols)
	if len(rows) != n {
		t.Fatalf("read %d rows, want %d", len(rows), n)
	}
	for i, got := range rows {
		amount, ratio, uniq, _ := value(i)
		a, aok := got[0].(float64)
		u, uok := got[2].(float64)
		if !aok || math.Float64bits(a) != math.Float64bits(amount) || got[1] != ratio || !uok || u != uniq {
			t.Fatalf("row %d: got %#v, want [%v %v %v]", i, got, amount, ratio, uniq)
		}
	}
	dictOnly := []format.Encoding{format.RLEDictionary}
	cases := []struct {
		group, col int
		dataPages  []format.Encoding // of the data pages, in EncodingStats
	}{
		{0, 0, dictOnly}, {1, 0, dictOnly},
		{0, 1, dictOnly}, {1, 1, dictOnly},
		{0, 2, []format.Encoding{format.Plain, format.RLEDictionary}}, {1, 2, []format.Encoding{format.Plain}},
	}
	first := []int{0, 150_000, n}
	for _, c := range cases {
		m := f.Metadata().RowGroups[c.group].Columns[c.col].MetaData
		var pages []format.Encoding
		for _, e := range m.EncodingStats {
			if e.PageType == format.DataPage {
				pages = append(pages, e.Encoding)
			}
		}
		hasDict := m.DictionaryPageOffset > 0
		if !slices.Equal(pages, c.dataPages) || hasDict != slices.Contains(c.dataPages, format.RLEDictionary) {
			t.Errorf("row group %d column %q: data pages %v, dictionary %v; want %v", c.group, cols[c.col].Name, pages, hasDict, c.dataPages)
		}
		nulls, lo, hi := bounds(cols[c.col].Type, rows[first[c.group]:first[c.group+1]], c.col)
		if st := m.Statistics; st.NullCount != nulls || !bytes.Equal(st.MinValue, lo) || !bytes.Equal(st.MaxValue, hi) {
			t.Errorf("row group %d column %q: statistics %d nulls [%x, %x], want %d [%x, %x]",
				c.group, cols[c.col].Name, st.NullCount, st.MinValue, st.MaxValue, nulls, lo, hi)
		}
	}
}

// TestWordHashSpreadsTheDoublesOfAColumn checks that the doubles a column
// often holds, which differ only in their high bits (small integers,
// quarters, powers of two, values and their negations), start their
// lookups in as many slots of a dictionary's table as there are values,
// nearly: a hash whose low bits leave those bits out put 1,000 integers
// in one run of slots, and a lookup then took 500 probes.
func TestWordHashSpreadsTheDoublesOfAColumn(t *testing.T) {
	sets := map[string][]float64{}
	for i := range 1000 {
		sets["integers"] = append(sets["integers"], float64(i))
		sets["quarters"] = append(sets["quarters"], float64(i-500)/4)
		sets["cents"] = append(sets["cents"], float64(i)/100)
	}
	for e := -100; e < 100; e++ {
		sets["powers of two"] = append(sets["powers of two"], math.Ldexp(1, e), -math.Ldexp(1, e))
	}
	for name, vs := range sets {
		var d dict
		for _, v := range vs {
			d.indexWord(math.Float64bits(v), 8)
		}
		mask := uint64(len(d.words) - 1)
		homes := map[uint64]bool{}
		probes := 0
		for _, v := range vs {
			h := wordHash(math.Float64bits(v))
			homes[h&mask] = true
			for s := h & mask; d.words[s] != h; s = (s + 1) & mask {
				probes++
			}
		}
		if len(homes) < len(vs)*2/3 || probes > len(vs) {
			t.Errorf("%s: %d values start in %d slots of %d and take %d probes beyond their first", name, len(vs), len(homes), len(d.words), probes)
		}
	}
}

// TestDeltaByteArrayBoundsFollowEveryOrder: the bounds of a string column
// written without a dictionary (too many distinct values: it falls back
// within the first row group) are its least and greatest values, whatever
// the order: runs going up (each value above the last, the highest), runs
// going down, values that are prefixes of the last or extend it, bytes
// above 0x7f (compared unsigned), repeats, random values, and an empty
// value followed by one above it and one between the two (an empty value
// takes no bytes: the next one starts where it does). Each row group's
// statistics are checked against the values it holds; the row groups
// take several pages each.
func TestDeltaByteArrayBoundsFollowEveryOrder(t *testing.T) {
	cols := []Column{{Name: "s", Type: TypeString}}
	rng := rand.New(rand.NewPCG(7, 11))
	var values []string
	for len(values) < 300_000 {
		base := fmt.Sprintf("k%08d", rng.IntN(100_000_000))
		switch rng.IntN(7) {
		case 5: // the empty value, one above it, one between the two
			values = append(values, "", base, base[:4])
		case 0: // up
			for j := range 50 {
				values = append(values, fmt.Sprintf("%s-%03d", base, j))
			}
		case 1: // down
			for j := range 50 {
				values = append(values, fmt.Sprintf("%s-%03d", base, 49-j))
			}
		case 2: // prefixes and extensions of the last value
			values = append(values, base, base+"x", base[:5], base+"xy", base[:3], base)
		case 3: // bytes above 0x7f, compared unsigned
			values = append(values, base+"\u00e9", base+"a", base+"\u00ff", base+"<\x01")
		case 4: // repeats
			values = append(values, base, base, base)
		default:
			values = append(values, base+strconv.Itoa(rng.IntN(1000)))
		}
	}
	values = values[:300_000]
	// The extremes at random places, so that no bound is the first value.
	values[rng.IntN(len(values))] = "\U0010FFFF"
	values[rng.IntN(len(values))] = ""
	value := func(i int) []byte {
		s, err := json.Marshal(values[i])
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Appendf(nil, `{"s":%s}`, s)
	}
	file, n := groupsFile(t, Schema{Columns: cols}, value, 160_000, 140_000)
	f, rows := readGo(t, file, cols)
	if n != len(values) || len(rows) != n {
		t.Fatalf("%d rows written, %d read, want %d", n, len(rows), len(values))
	}
	first := 0
	delta := false
	for g, rg := range f.Metadata().RowGroups {
		m := rg.Columns[0].MetaData
		delta = delta || slices.Contains(m.Encoding, format.DeltaByteArray)
		pages := 0
		for _, e := range m.EncodingStats {
			if e.PageType == format.DataPage && e.Encoding == format.DeltaByteArray {
				pages += int(e.Count)
			}
		}
		if pages < 2 {
			t.Errorf("row group %d: %d DELTA_BYTE_ARRAY pages, the test wants several", g, pages)
		}
		lo, hi := values[first], values[first]
		for i := first; i < first+int(rg.NumRows); i++ {
			if got := rows[i][0].(string); got != values[i] {
				t.Fatalf("row %d: %q, want %q", i, got, values[i])
			}
			lo, hi = min(lo, values[i]), max(hi, values[i])
		}
		if st := m.Statistics; string(st.MinValue) != lo || string(st.MaxValue) != hi {
			t.Errorf("row group %d: bounds [%q, %q], want [%q, %q]", g, st.MinValue, st.MaxValue, lo, hi)
		}
		first += int(rg.NumRows)
	}
	if !delta {
		t.Errorf("no DELTA_BYTE_ARRAY pages: the test wants values written without a dictionary")
	}
}
