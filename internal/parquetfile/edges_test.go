package parquetfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// arrowDumpPy reads one Parquet file with pyarrow and prints its columns with
// every value in a lossless form (floats as float.hex, ints as decimal
// strings, strings and binaries as base64 of their bytes), and the
// statistics of every column chunk (physical min/max, same forms).
const arrowDumpPy = `
import base64, json, sys
import pyarrow as pa, pyarrow.parquet as pq

def enc(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, float):
        return v.hex()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return base64.b64encode(v.encode('utf-8', 'surrogatepass')).decode()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    return repr(v)

f = pq.ParquetFile(sys.argv[1])
md = f.metadata
t = f.read()
cols = {}
for name in t.column_names:
    col = t.column(name)
    if isinstance(col.type, pa.ExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], type=col.type.storage_type)
    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.int64())
    elif pa.types.is_date32(col.type):
        col = col.cast(pa.int32())
    cols[name] = [enc(v) for v in col.to_pylist()]
stats = []
for i in range(md.num_row_groups):
    g = []
    for j in range(md.num_columns):
        s = md.row_group(i).column(j).statistics
        if s is None:
            g.append(None)
            continue
        g.append({"has": s.has_min_max, "nulls": s.null_count,
                  "min": enc(s.min_raw) if s.has_min_max else None,
                  "max": enc(s.max_raw) if s.has_min_max else None})
    stats.append(g)
print(json.dumps({"rows": t.num_rows, "columns": cols, "stats": stats}))
`

// arrowDump is what arrowDumpPy prints.
type arrowDump struct {
	Rows    int                  `json:"rows"`
	Columns map[string][]any     `json:"columns"`
	Stats   [][]*arrowChunkStats `json:"stats"`
}

// arrowChunkStats are the statistics of a column chunk, as pyarrow sees them.
type arrowChunkStats struct {
	Has   bool `json:"has"`
	Nulls int  `json:"nulls"`
	Min   any  `json:"min"`
	Max   any  `json:"max"`
}

// readArrow has pyarrow read file.
func readArrow(t *testing.T, file []byte) arrowDump {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.parquet")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../../scripts/pyarrow")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "python", "-c", arrowDumpPy, path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, stderr.String())
	}
	var out arrowDump
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("pyarrow output: %v\n%s", err, stdout.String())
	}
	return out
}

// fileOf writes the given record values (in row groups of groupSize,
// 0: one) and returns the whole file.
func fileOf(t *testing.T, s Schema, groupSize int, values ...string) []byte {
	t.Helper()
	w, err := NewWriter(s)
	if err != nil {
		t.Fatal(err)
	}
	var file []byte
	for i, v := range values {
		if err := w.Append([]byte(v)); err != nil {
			t.Fatalf("record %d %#q: %v", i, v, err)
		}
		if groupSize > 0 && (i+1)%groupSize == 0 {
			if file, err = w.AppendRowGroup(file); err != nil {
				t.Fatal(err)
			}
		}
	}
	if file, err = w.AppendRowGroup(file); err != nil {
		t.Fatal(err)
	}
	b, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	return append(file, b...)
}

// A repeated key counts by its last value (Column.Field's doc), also for a
// nested path: the first "a" object's "b" is not in the record once a later
// "a" replaces it.
func TestDuplicateKeyOfANestedPathLastCounts(t *testing.T) {
	cols := []Column{{Name: "id", Type: TypeInt64}, {Name: "ab", Type: TypeInt64, Nullable: true, Field: "a.b"}}
	values := []string{
		`{"id": 1, "a": {"b": 1}, "a": 5}`,
		`{"id": 2, "a": {"b": 2}, "a": null}`,
		`{"id": 3, "a": {"b": 3}, "a": {"c": 3}}`,
		`{"id": 4, "a": {"b": 4}, "a": {"b": 44}}`,
	}
	file := fileOf(t, Schema{Columns: cols}, 0, values...)
	_, rows := readGo(t, file, cols)
	want := []any{nil, nil, nil, int64(44)}
	for i, r := range rows {
		if r[1] != want[i] {
			t.Errorf("%s: a.b = %#v, want %#v (the last \"a\" counts)", values[i], r[1], want[i])
		}
	}
}

// A repeated key that leaves a required nested column without a value makes
// the record bad, as a missing field does, and buffers nothing of it.
func TestDuplicateKeyOfANestedPathCanLeaveARequiredColumnMissing(t *testing.T) {
	cols := []Column{{Name: "id", Type: TypeInt64}, {Name: "ab", Type: TypeInt64, Field: "a.b"}}
	w, err := NewWriter(Schema{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		`{"id": 1, "a": {"b": 1}, "a": 5}`,
		`{"id": 2, "a": {"b": 2}, "a": null}`,
		`{"id": 3, "a": {"b": 3}, "a": {"c": 3}}`,
		`{"id": 4, "a": {"b": 4}, "x": 0, "a": {}}`,
	} {
		err := w.Append([]byte(v))
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), `field "a.b" is missing`) {
			t.Errorf("%s: %v, want ErrBadRecord for a missing a.b", v, err)
		}
		if w.Buffered() != 0 {
			t.Fatalf("%s: Buffered is %d", v, w.Buffered())
		}
	}
	if err := w.Append([]byte(`{"id": 5, "a": {"b": 5}, "a": {"b": 55}}`)); err != nil {
		t.Fatal(err)
	}
	b, err := w.FlushRowGroup()
	if err != nil {
		t.Fatal(err)
	}
	footer, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := readGo(t, append(b, footer...), cols); len(rows) != 1 || rows[0][0] != int64(5) || rows[0][1] != int64(55) {
		t.Errorf("rows %v, want [[5 55]]", rows)
	}
}

// Values at the edges of every type, written and read back by pyarrow, bit
// for bit, with the chunk statistics pyarrow sees.
func TestPyarrowReadsEdgeValues(t *testing.T) {
	cols := []Column{
		{Name: "i32", Type: TypeInt32},
		{Name: "i64", Type: TypeInt64},
		{Name: "d", Type: TypeDouble},
		{Name: "f", Type: TypeFloat},
		{Name: "s", Type: TypeString, Nullable: true},
		{Name: "ts", Type: TypeTimestampUS},
	}
	type row struct {
		i32, i64, d, f, s, ts string
	}
	rows := []row{
		{"-2147483648", "-9223372036854775808", "-0", "-0.0", `""`, "-9223372036854775808"},
		{"2147483647", "9223372036854775807", "0", "0", `"\u0000"`, "9223372036854775807"},
		{"-2147483648", "-9223372036854775808", "5e-324", "1.4e-45", `"\ud83d\ude00"`, "0"},
		{"2147483647", "9223372036854775807", "1.7976931348623157e308", "3.4028234663852886e38", `"\ud800"`, `"0001-01-01T00:00:00Z"`},
		{"0", "0", "-1.7976931348623157e308", "-3.4028234663852886e38", `"é\u00e9"`, `"9999-12-31T23:59:59.999999999Z"`},
		{"-1", "-1", "0.1", "0.1", `"\uDBFF\uDFFF"`, `"1969-12-31T23:59:59.9999995Z"`},
		{"1", "1", "123456789012345678901234567890", "16777217", `"a\"b\\c\/d\b\f\n\r\t"`, "1"},
		{"-2147483648", "-9223372036854775808", "2.2250738585072014e-308", "1e-38", `null`, "-1"},
	}
	var values []string
	for _, r := range rows {
		values = append(values, `{"i32":`+r.i32+`,"i64":`+r.i64+`,"d":`+r.d+`,"f":`+r.f+`,"s":`+r.s+`,"ts":`+r.ts+`}`)
	}
	file := fileOf(t, Schema{Columns: cols}, 0, values...)
	got := readArrow(t, file)
	wantS := []any{"", "\x00", "\U0001F600", "\uFFFD", "\u00e9\u00e9", "\U0010FFFF", "a\"b\\c/d\b\f\n\r\t", nil}
	wantTS := []string{"-9223372036854775808", "9223372036854775807", "0", "-62135596800000000", "253402300799999999", "-1", "1", "-1"}
	for i, r := range rows {
		if got.Columns["i32"][i] != r.i32 || got.Columns["i64"][i] != r.i64 || got.Columns["ts"][i] != wantTS[i] {
			t.Errorf("row %d: i32 %v i64 %v ts %v, want %s %s %s", i, got.Columns["i32"][i], got.Columns["i64"][i], got.Columns["ts"][i], r.i32, r.i64, wantTS[i])
		}
		wd, _ := strconv.ParseFloat(r.d, 64)
		gd, _ := strconv.ParseFloat(got.Columns["d"][i].(string), 64)
		wf, _ := strconv.ParseFloat(r.f, 32)
		gf, _ := strconv.ParseFloat(got.Columns["f"][i].(string), 64)
		if math.Float64bits(wd) != math.Float64bits(gd) || math.Float64bits(wf) != math.Float64bits(gf) {
			t.Errorf("row %d: d %v f %v, want %v %v", i, gd, gf, wd, wf)
		}
		var ws any
		if wantS[i] != nil {
			ws = base64.StdEncoding.EncodeToString([]byte(wantS[i].(string)))
		}
		if got.Columns["s"][i] != ws {
			t.Errorf("row %d: s %v, want %v (%q)", i, got.Columns["s"][i], ws, wantS[i])
		}
	}
}

// A chunk whose first page is all nulls while the column has a dictionary
// (the page then has no index and is encoded without one), then values that
// outgrow the dictionary; booleans across pages. pyarrow reads every value.
func TestPyarrowReadsPagesOfNullsAndDictionaryFallback(t *testing.T) {
	cols := []Column{
		{Name: "s", Type: TypeString, Nullable: true},
		{Name: "d", Type: TypeDouble, Nullable: true},
		{Name: "b", Type: TypeBoolean},
	}
	const nulls, n = 1_100_000, 1_250_000
	sval := func(i int) string { return fmt.Sprintf("value-%09d-xxxxxxxxxxxxxxxxxxxx", i) }
	w, err := NewWriter(Schema{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var v string
		if i < nulls {
			v = fmt.Sprintf(`{"b":%v}`, i%3 == 0)
		} else {
			v = fmt.Sprintf(`{"s":%q,"d":%d.5,"b":%v}`, sval(i), i, i%3 == 0)
		}
		if err := w.Append([]byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	file, err := w.FlushRowGroup()
	if err != nil {
		t.Fatal(err)
	}
	footer, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	file = append(file, footer...)
	got := readArrow(t, file)
	if got.Rows != n {
		t.Fatalf("pyarrow read %d rows, want %d", got.Rows, n)
	}
	for i := range n {
		var ws, wd any
		if i >= nulls {
			ws = base64.StdEncoding.EncodeToString([]byte(sval(i)))
			wd = strconv.FormatFloat(float64(i)+0.5, 'x', -1, 64)
		}
		gd := got.Columns["d"][i]
		if gd != nil {
			f, _ := strconv.ParseFloat(gd.(string), 64)
			gd = strconv.FormatFloat(f, 'x', -1, 64)
		}
		if got.Columns["s"][i] != ws || gd != wd || got.Columns["b"][i] != (i%3 == 0) {
			t.Fatalf("row %d: s %v d %v b %v; want %v %v %v", i, got.Columns["s"][i], gd, got.Columns["b"][i], ws, wd, i%3 == 0)
		}
	}
}

// Row groups in which every value of a nullable column is null (pages of no
// value, of every encoding), between row groups of values, and columns of
// only empty values.
func TestPyarrowReadsChunksOfOnlyNulls(t *testing.T) {
	var cols []Column
	for _, typ := range columnTypes {
		cols = append(cols, Column{Name: typ, Type: typ, Nullable: true})
	}
	full := `{"string":"x","int32":-5,"int64":7,"float":1.5,"double":-2.25,"boolean":true,"timestamp_ms":5,"timestamp_us":6,"date":7,"bytes":"AA==","json":{"k":1}}`
	empty := `{"string":"","int32":0,"int64":0,"float":0,"double":0,"boolean":false,"timestamp_ms":0,"timestamp_us":0,"date":0,"bytes":"","json":""}`
	values := []string{full, `{}`, `{}`, `{}`, full, empty, empty, empty, `{}`, full, `{}`, empty}
	file := fileOf(t, Schema{Columns: cols}, 3, values...)
	got := readArrow(t, file)
	_, goRows := readGo(t, file, cols)
	if got.Rows != len(values) {
		t.Fatalf("pyarrow read %d rows, want %d", got.Rows, len(values))
	}
	for i, v := range values {
		for c, col := range cols {
			a := got.Columns[col.Name][i]
			g := goRows[i][c]
			if (v == `{}`) != (a == nil) || (v == `{}`) != (g == nil) {
				t.Errorf("row %d %s: pyarrow %v, parquet-go %v, record %s", i, col.Name, a, g, v)
			}
		}
	}
}

// Random records (strings of escapes, surrogates, non-ASCII; numbers of
// every form; nulls and missing fields; duplicate keys; nested objects),
// in row groups of random sizes, read back by parquet-go and compared with
// what encoding/json makes of the same record; chunk bounds compared with
// the values read.
func TestRandomRecordsMatchEncodingJSON(t *testing.T) {
	cols := []Column{
		{Name: "s", Type: TypeString, Nullable: true},
		{Name: "d", Type: TypeDouble, Nullable: true},
		{Name: "f", Type: TypeFloat, Nullable: true},
		{Name: "i", Type: TypeInt64, Nullable: true},
		{Name: "n", Type: TypeString, Nullable: true, Field: "o.n"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "z", "é", "😀", `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udc00x`, `\ud83d\u0041`, `\"`, `\\`, `\/`, `\n`, `\u0000`, "\u007f", "\U0010FFFF", `\uFFFF`, ""}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		return b.String()
	}
	num := func() string {
		switch rng.IntN(8) {
		case 0:
			return strconv.FormatFloat(rng.NormFloat64()*1e6, 'f', rng.IntN(8), 64)
		case 1:
			return strconv.FormatFloat(rng.NormFloat64(), 'e', rng.IntN(17), 64)
		case 2:
			return "-0"
		case 3:
			return strconv.FormatInt(rng.Int64()-rng.Int64(), 10)
		case 4:
			return fmt.Sprintf("%d.%015d", rng.IntN(1000), rng.Int64N(1e15))
		case 5:
			return fmt.Sprintf("0.%0*d%d", rng.IntN(25), 0, rng.IntN(1000))
		case 6:
			return strconv.Itoa(rng.IntN(100) - 50)
		}
		return strconv.FormatFloat(rng.Float64(), 'g', -1, 64)
	}
	var values []string
	for range 20_000 {
		var fields []string
		add := func(k, v string) { fields = append(fields, `"`+k+`":`+v) }
		if rng.IntN(5) > 0 {
			add("s", str())
		}
		if rng.IntN(9) == 0 {
			add("s", "null")
		}
		if rng.IntN(5) > 0 {
			add("d", num())
		}
		if rng.IntN(5) > 0 {
			add("f", strconv.FormatFloat(float64(float32(rng.NormFloat64()*100)), 'g', -1, 32))
		}
		if rng.IntN(5) > 0 {
			add("i", strconv.FormatInt(rng.Int64()-rng.Int64(), 10))
		}
		if rng.IntN(3) > 0 {
			add("o", `{"x":[1,{"n":2}],"n":`+str()+`}`)
		}
		rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
		values = append(values, "{"+strings.Join(fields, ",")+"}")
	}
	file := fileOf(t, Schema{Columns: cols}, 1+rng.IntN(7000), values...)
	f, rows := readGo(t, file, cols)
	if len(rows) != len(values) {
		t.Fatalf("%d rows, want %d", len(rows), len(values))
	}
	for r, v := range values {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		want := make([]any, len(cols))
		if s, ok := m["s"].(string); ok {
			want[0] = s
		}
		if n, ok := m["d"].(json.Number); ok {
			want[1], _ = strconv.ParseFloat(string(n), 64)
		}
		if n, ok := m["f"].(json.Number); ok {
			f, _ := strconv.ParseFloat(string(n), 32)
			want[2] = float32(f)
		}
		if n, ok := m["i"].(json.Number); ok {
			want[3], _ = strconv.ParseInt(string(n), 10, 64)
		}
		if o, ok := m["o"].(map[string]any); ok {
			if s, ok := o["n"].(string); ok {
				want[4] = s
			}
		}
		for c := range cols {
			g, w := rows[r][c], want[c]
			if gd, ok := g.(float64); ok && w != nil && math.Float64bits(gd) == math.Float64bits(w.(float64)) {
				continue
			}
			if gf, ok := g.(float32); ok && w != nil && math.Float32bits(gf) == math.Float32bits(w.(float32)) {
				continue
			}
			if g != w {
				t.Fatalf("row %d column %s: got %#v, want %#v\n%s", r, cols[c].Name, g, w, v)
			}
		}
	}
	first := 0
	for gi, rg := range f.Metadata().RowGroups {
		for c, cc := range rg.Columns {
			nulls, lo, hi := bounds(cols[c].Type, rows[first:first+int(rg.NumRows)], c)
			st := cc.MetaData.Statistics
			if st.NullCount != nulls || !bytes.Equal(st.MinValue, lo) || !bytes.Equal(st.MaxValue, hi) {
				t.Errorf("row group %d column %q: statistics %d nulls [%x, %x], want %d [%x, %x]",
					gi, cols[c].Name, st.NullCount, st.MinValue, st.MaxValue, nulls, lo, hi)
			}
		}
		first += int(rg.NumRows)
	}
}

// A chunk whose first value is the empty string has the empty string as its
// minimum: the statistics must say so, not leave min_value out (a reader
// then has no bounds for the chunk: pyarrow's has_min_max is false).
func TestEmptyStringMinimumIsInTheStatistics(t *testing.T) {
	cols := []Column{{Name: "s", Type: TypeString}, {Name: "b", Type: TypeBytes}}
	file := fileOf(t, Schema{Columns: cols}, 0, `{"s":"","b":""}`, `{"s":"b","b":"AP8="}`)
	f, _ := readGo(t, file, cols)
	for c, cc := range f.Metadata().RowGroups[0].Columns {
		st := cc.MetaData.Statistics
		if st.MinValue == nil || st.MaxValue == nil {
			t.Errorf("column %q: statistics min %x (nil %v), max %x (nil %v): want min \"\" and max set",
				cols[c].Name, st.MinValue, st.MinValue == nil, st.MaxValue, st.MaxValue == nil)
		}
	}
	got := readArrow(t, file)
	for c, st := range got.Stats[0] {
		if !st.Has {
			t.Errorf("column %q: pyarrow sees no min/max (%+v)", cols[c].Name, *st)
		}
	}
}

// A json column and a column nested in it read the same object: with "a"
// repeated, the json column has the last "a" and the nested one must too.
func TestDuplicateKeyJSONColumnAndNestedColumnAgree(t *testing.T) {
	cols := []Column{{Name: "a", Type: TypeJSON, Nullable: true}, {Name: "ab", Type: TypeString, Nullable: true, Field: "a.b"}}
	file := fileOf(t, Schema{Columns: cols}, 0, `{"a":{"b":"old"},"a":{"c":1}}`)
	_, rows := readGo(t, file, cols)
	if rows[0][0] != `{"c":1}` || rows[0][1] != nil {
		t.Errorf("row %q: a = %#v, a.b = %#v; want a.b null (the object in a has no b)", `{"a":{"b":"old"},"a":{"c":1}}`, rows[0][0], rows[0][1])
	}
}
