package parquetfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// allColumns has every column type, nullable and not, at top-level and
// nested paths, and a json column whose object holds other columns' paths.
var allColumns = []Column{
	{Name: "id", Type: TypeInt64},
	{Name: "name", Type: TypeString, Nullable: true},
	{Name: "n32", Type: TypeInt32, Nullable: true},
	{Name: "f", Type: TypeFloat, Nullable: true},
	{Name: "d", Type: TypeDouble},
	{Name: "ok", Type: TypeBoolean, Nullable: true},
	{Name: "ts_ms", Type: TypeTimestampMS, Nullable: true},
	{Name: "ts_us", Type: TypeTimestampUS, Nullable: true, Field: "meta.at"},
	{Name: "day", Type: TypeDate, Nullable: true},
	{Name: "blob", Type: TypeBytes, Nullable: true},
	{Name: "meta", Type: TypeJSON, Nullable: true},
	{Name: "city", Type: TypeString, Nullable: true, Field: "meta.address.city"},
}

// record returns the i-th test record value and the row it must become: per
// column nil, int64, string, int32, float32, float64 or bool (bytes as a
// string, timestamps as int64 in their unit, dates as int32 days).
func record(i int) ([]byte, []any) {
	var b strings.Builder
	want := make([]any, len(allColumns))
	field := func(key, raw string) {
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", key, raw)
	}
	b.WriteString("{")
	// Something no column reads comes first, to be skipped.
	if i%3 == 0 {
		field("extra", `{"deep": [1, -2.5e-3, "x\"]}", true, null, {"a": [[]]}], "n": {}}`)
	}

	want[0] = int64(i) - 50
	field("id", strconv.Itoa(i-50))

	switch i % 5 {
	case 0: // absent
	case 1:
		field("name", "null")
	case 2: // escapes, some of them UTF-16 pairs
		field("name", `"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \t\n"`)
		want[1] = "café 😀 \"q\" \\ / \t\n"
	default:
		s := fmt.Sprintf("user-%d ü", i%13)
		raw, _ := json.Marshal(s)
		field("name", string(raw))
		want[1] = s
	}

	switch {
	case i%7 == 0:
		field("n32", "null")
	case i%7 == 1:
		field("n32", strconv.Itoa(math.MinInt32))
		want[2] = int32(math.MinInt32)
	default:
		v := int32(i * 7919)
		field("n32", strconv.Itoa(int(v)))
		want[2] = v
	}

	if i%4 != 0 {
		v := float32(i) / 3
		field("f", strconv.FormatFloat(float64(v), 'g', -1, 32))
		want[3] = v
	}

	d := float64(i)*1.5e10 + 0.25
	if i%6 == 0 {
		d = -float64(i) // an integer literal in a double column
	}
	field("d", strconv.FormatFloat(d, 'g', -1, 64))
	want[4] = d

	switch i % 3 {
	case 0:
		field("ok", "true")
		want[5] = true
	case 1:
		field("ok", "false")
		want[5] = false
	}

	ms := int64(1_700_000_000_000) + int64(i)*1001
	if i%2 == 0 {
		field("ts_ms", strconv.FormatInt(ms, 10))
	} else {
		field("ts_ms", `"`+time.UnixMilli(ms).In(time.FixedZone("", 3600)).Format(time.RFC3339Nano)+`"`)
	}
	want[6] = ms

	if i%4 != 0 {
		us := int64(-86_400_000_000) + int64(i)*123_457
		var meta string
		if i%2 == 0 {
			meta = fmt.Sprintf(`{"at": %d, "address": {"city": "Zürich", "zip": 8000}, "tags": [1, {"x": null}]}`, us)
			want[11] = "Zürich"
		} else {
			meta = fmt.Sprintf(`{ "address" : null , "at":"%s"}`, time.UnixMicro(us).UTC().Format(time.RFC3339Nano))
		}
		field("meta", meta)
		want[7] = us
		want[10] = meta
	}

	days := int32(19_000 + i)
	switch i % 3 {
	case 0:
		field("day", strconv.Itoa(int(days)))
		want[8] = days
	case 1:
		field("day", `"`+time.Unix(int64(days)*86400, 0).UTC().Format(time.DateOnly)+`"`)
		want[8] = days
	}

	if i%2 == 1 {
		blob := []byte{byte(i), 0, 255, byte(i >> 8)}
		field("blob", `"`+base64.StdEncoding.EncodeToString(blob)+`"`)
		want[9] = string(blob)
	}
	b.WriteString("}")
	return []byte(b.String()), want
}

// goValue is what a value read back by parquet-go is in the terms of record.
func goValue(typ string, v parquet.Value) any {
	if v.IsNull() {
		return nil
	}
	switch typ {
	case TypeString, TypeJSON, TypeBytes:
		return string(v.ByteArray())
	case TypeInt32, TypeDate:
		return v.Int32()
	case TypeInt64, TypeTimestampMS, TypeTimestampUS:
		return v.Int64()
	case TypeFloat:
		return v.Float()
	case TypeDouble:
		return v.Double()
	case TypeBoolean:
		return v.Boolean()
	}
	panic(typ)
}

// readGo reads a whole file with parquet-go.
func readGo(t testing.TB, file []byte, cols []Column) (*parquet.File, [][]any) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the file: %v", err)
	}
	r := parquet.NewReader(f)
	defer r.Close()
	var rows [][]any
	buf := make([]parquet.Row, 50)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			got := make([]any, len(cols))
			for _, v := range row {
				got[v.Column()] = goValue(cols[v.Column()].Type, v)
			}
			rows = append(rows, got)
		}
		if err == io.EOF {
			return f, rows
		}
		if err != nil {
			t.Fatalf("parquet-go cannot read row %d: %v", len(rows), err)
		}
	}
}

// checkRows compares rows with record(first), record(first+1)...
func checkRows(t testing.TB, rows [][]any, first, n int) {
	t.Helper()
	if len(rows) != n {
		t.Fatalf("read %d rows, want %d", len(rows), n)
	}
	for i, got := range rows {
		_, want := record(first + i)
		for c := range want {
			if got[c] != want[c] {
				t.Fatalf("row %d column %q: got %#v, want %#v", i, allColumns[c].Name, got[c], want[c])
			}
		}
	}
}
