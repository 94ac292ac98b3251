package parquetfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/connector-dev/connector/internal/spec"
)

// sink plays the caller: a file of appended bytes, a checkpoint store, and a
// source position that rewinds to the checkpoint on a crash.
type sink struct {
	t            *testing.T
	schema       Schema
	w            *Writer
	file         []byte
	stored       []byte // the State of the last checkpoint, as JSON
	next         int    // index of the next record the source delivers
	checkpointed int    // source position of the last checkpoint
}

func newSink(t *testing.T, s Schema) *sink {
	w, err := NewWriter(s)
	if err != nil {
		t.Fatal(err)
	}
	k := &sink{t: t, schema: s, w: w}
	k.stored = k.state()
	return k
}

func (k *sink) state() []byte {
	b, err := json.Marshal(k.w.State())
	if err != nil {
		k.t.Fatal(err)
	}
	return b
}

func (k *sink) append(n int) {
	for range n {
		v, _ := record(k.next)
		if err := k.w.Append(v); err != nil {
			k.t.Fatalf("record %d: %v", k.next, err)
		}
		k.next++
	}
}

func (k *sink) flush() {
	b, err := k.w.FlushRowGroup()
	if err != nil {
		k.t.Fatal(err)
	}
	k.file = append(k.file, b...)
}

func (k *sink) checkpoint() {
	k.flush()
	k.stored, k.checkpointed = k.state(), k.next
}

// crash drops the Writer, truncates the file to the checkpoint's size and
// resumes from its State, as a new process would.
func (k *sink) crash() {
	var st State
	if err := json.Unmarshal(k.stored, &st); err != nil {
		k.t.Fatal(err)
	}
	k.file = k.file[:st.Size]
	k.next = k.checkpointed
	w, err := Resume(k.schema, st)
	if err != nil {
		k.t.Fatalf("resume: %v", err)
	}
	k.w = w
}

func (k *sink) roll() []byte {
	k.flush()
	b, err := k.w.Footer()
	if err != nil {
		k.t.Fatal(err)
	}
	return append(k.file, b...)
}

// crashyFile writes records 0..n-1 into one file across checkpoints, with
// crashes before the first checkpoint, after flushed but uncheckpointed row
// groups, and right after a checkpoint.
func crashyFile(t *testing.T, s Schema) (file []byte, rows int) {
	k := newSink(t, s)
	k.append(4)
	k.flush()
	k.crash() // before any checkpoint: back to an empty file
	k.append(10)
	k.checkpoint()
	k.append(25)
	k.flush()
	k.append(5)
	k.checkpoint() // two row groups in one checkpoint
	k.append(7)
	k.flush()
	k.append(3)
	k.crash() // a flushed row group and buffered rows are lost
	k.append(130)
	k.checkpoint()
	k.checkpoint() // nothing buffered: flushes nothing
	k.crash()      // right after a checkpoint
	k.append(70)
	return k.roll(), k.next
}

func TestFileAcrossCheckpointsAndCrashesHoldsEveryRecordOnce(t *testing.T) {
	s := Schema{Columns: allColumns}
	file, n := crashyFile(t, s)
	f, rows := readGo(t, file, allColumns)
	checkRows(t, rows, 0, n)
	if got, want := len(f.RowGroups()), 5; got != want {
		t.Errorf("%d row groups, want %d", got, want)
	}
	for i, c := range f.Schema().Fields() {
		if c.Name() != allColumns[i].Name {
			t.Errorf("column %d is %q, want %q (the configured order)", i, c.Name(), allColumns[i].Name)
		}
		if c.Optional() != allColumns[i].Nullable {
			t.Errorf("column %q optional %v, want %v", c.Name(), c.Optional(), allColumns[i].Nullable)
		}
	}
}

func TestStateSizeIsWhatFlushReturned(t *testing.T) {
	k := newSink(t, Schema{Columns: allColumns})
	for i := range 3 {
		k.append(10 + i)
		k.checkpoint()
		if st := k.w.State(); st.Size != int64(len(k.file)) || st.Rows != int64(k.next) || len(st.RowGroups) != i+1 {
			t.Fatalf("state %d: size %d rows %d groups %d; file has %d bytes, %d rows", i, st.Size, st.Rows, len(st.RowGroups), len(k.file), k.next)
		}
	}
	if string(k.file[:4]) != "PAR1" {
		t.Fatalf("file starts with %q", k.file[:4])
	}
}

func TestEmptyFileIsAValidParquetFile(t *testing.T) {
	w, err := NewWriter(Schema{Columns: allColumns})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := w.FlushRowGroup(); err != nil || b != nil {
		t.Fatalf("FlushRowGroup with no rows = %d bytes, %v; want nothing", len(b), err)
	}
	file, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	_, rows := readGo(t, file, allColumns)
	if len(rows) != 0 {
		t.Fatalf("%d rows", len(rows))
	}
}

func TestResumeKeepsTheCompressionTheFileStartedWith(t *testing.T) {
	k := newSink(t, Schema{Columns: allColumns, Compression: CompressionSnappy})
	k.append(20)
	k.checkpoint()
	k.schema.Compression = CompressionGzip
	k.crash()
	k.append(20)
	f, rows := readGo(t, k.roll(), allColumns)
	checkRows(t, rows, 0, 40)
	for i, rg := range f.Metadata().RowGroups {
		for j, c := range rg.Columns {
			if c.MetaData.Codec != format.Snappy {
				t.Errorf("row group %d column %d: %s, want SNAPPY", i, j, c.MetaData.Codec)
			}
		}
	}
}

func TestResumeRefusesAnotherSchemaOrABrokenState(t *testing.T) {
	s := Schema{Columns: allColumns}
	k := newSink(t, s)
	k.append(10)
	k.checkpoint()
	k.append(10)
	k.checkpoint()
	good := k.w.State()

	other := Schema{Columns: append(append([]Column{}, allColumns...), Column{Name: "new", Type: TypeString, Nullable: true})}
	if _, err := Resume(other, good); !errors.Is(err, ErrBadState) {
		t.Errorf("resume with another column: %v, want ErrBadState", err)
	}
	broken := map[string]func(*State){
		"size":      func(st *State) { st.Size++ },
		"rows":      func(st *State) { st.Rows-- },
		"lost":      func(st *State) { st.RowGroups = st.RowGroups[1:] },
		"swapped":   func(st *State) { st.RowGroups[0], st.RowGroups[1] = st.RowGroups[1], st.RowGroups[0] },
		"garbage":   func(st *State) { st.RowGroups[1] = []byte("garbage") },
		"empty":     func(st *State) { st.Size = 0 },
		"no schema": func(st *State) { st.Schema = "" },
	}
	for name, breakIt := range broken {
		st := good
		st.RowGroups = append([][]byte(nil), good.RowGroups...)
		breakIt(&st)
		if _, err := Resume(s, st); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: %v, want ErrBadState", name, err)
		}
	}
	if _, err := Resume(s, good); err != nil {
		t.Errorf("the good state: %v", err)
	}
}

func TestFooterRefusesBufferedRowsAndEndsTheWriter(t *testing.T) {
	k := newSink(t, Schema{Columns: allColumns})
	k.append(1)
	if _, err := k.w.Footer(); err == nil {
		t.Fatal("Footer with a buffered row: no error")
	}
	k.roll()
	if err := k.w.Append([]byte(`{"id": 1, "d": 1}`)); err == nil {
		t.Fatal("Append after Footer: no error")
	}
}

func TestBadRecordsReturnErrBadRecordAndBufferNothing(t *testing.T) {
	cols := []Column{
		{Name: "id", Type: TypeInt64},
		{Name: "n32", Type: TypeInt32, Nullable: true},
		{Name: "f", Type: TypeFloat, Nullable: true},
		{Name: "ok", Type: TypeBoolean, Nullable: true},
		{Name: "name", Type: TypeString, Nullable: true},
		{Name: "blob", Type: TypeBytes, Nullable: true},
		{Name: "ts", Type: TypeTimestampMS, Nullable: true},
		{Name: "day", Type: TypeDate, Nullable: true},
		{Name: "deep", Type: TypeInt64, Nullable: true, Field: "a.b"},
	}
	bad := map[string]string{
		"array":             `[1]`,
		"string":            `"x"`,
		"empty":             ``,
		"unterminated":      `{"id": 1`,
		"trailing comma":    `{"id": 1,}`,
		"trailing value":    `{"id": 1} {}`,
		"leading zero":      `{"id": 01}`,
		"bare word":         `{"id": 1, "x": nul}`,
		"single quotes":     `{'id': 1}`,
		"missing":           `{"n32": 1}`,
		"null":              `{"id": null}`,
		"string for int64":  `{"id": "1"}`,
		"fraction":          `{"id": 1.5}`,
		"exponent":          `{"id": 1e3}`,
		"int64 overflow":    `{"id": 9223372036854775808}`,
		"int32 overflow":    `{"id": 1, "n32": 2147483648}`,
		"float overflow":    `{"id": 1, "f": 1e39}`,
		"bool as number":    `{"id": 1, "ok": 1}`,
		"number for string": `{"id": 1, "name": 5}`,
		"object for string": `{"id": 1, "name": {}}`,
		"bad base64":        `{"id": 1, "blob": "!!!"}`,
		"bad timestamp":     `{"id": 1, "ts": "yesterday"}`,
		"bad date":          `{"id": 1, "day": "2024-13-01"}`,
		"nested wrong type": `{"id": 1, "a": {"b": true}}`,
		"invalid UTF-8":     "{\"id\": 1, \"name\": \"\xff\"}",
		"short \\u":         `{"id": 1, "name": "\u12"}`,
		"control character": "{\"id\": 1, \"name\": \"a\tb\"}",
		"too deep":          `{"id": 1, "x": ` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
	}
	w, err := NewWriter(Schema{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte(`{"id": 7, "name": "kept"}`)); err != nil {
		t.Fatal(err)
	}
	buffered := w.Buffered()
	for name, v := range bad {
		if err := w.Append([]byte(v)); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: %#q: %v, want ErrBadRecord", name, v, err)
		}
		if w.Buffered() != buffered {
			t.Errorf("%s: Buffered went from %d to %d", name, buffered, w.Buffered())
		}
	}
	good := `{"id": -9223372036854775808, "n32": -2147483648, "f": 3.4e38, "a": {"b": null}, "ts": "1970-01-01T00:00:00.001Z", "day": "1969-12-31", "blob": "AP8=", "name": ""}`
	if err := w.Append([]byte(good)); err != nil {
		t.Fatalf("%s: %v", good, err)
	}
	b, err := w.FlushRowGroup()
	if err != nil {
		t.Fatal(err)
	}
	footer, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	_, rows := readGo(t, append(b, footer...), cols)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the 2 good ones", len(rows))
	}
	if rows[0][0] != int64(7) || rows[0][4] != "kept" || rows[1][0] != int64(-1<<63) || rows[1][1] != int32(-1<<31) ||
		rows[1][6] != int64(1) || rows[1][7] != int32(-1) || rows[1][5] != "\x00\xff" || rows[1][8] != nil || rows[1][4] != "" {
		t.Fatalf("rows: %v", rows)
	}
}

func TestSchemaValidateNamesEveryProblemByKey(t *testing.T) {
	s := Schema{
		Columns: []Column{
			{Name: "a", Type: TypeInt64},
			{Name: "a", Type: "text"},
			{Name: "", Type: TypeString},
			{Name: "b", Type: TypeJSON, Field: "x..y"},
		},
		Compression: "lz4",
	}
	var p spec.Problems
	s.Validate(&p)
	var keys []string
	for _, pr := range p.List() {
		keys = append(keys, pr.Key)
	}
	want := "columns[1].name columns[1].type columns[2].name columns[3].field compression"
	if strings.Join(keys, " ") != want {
		t.Errorf("problems at %q, want %q\n%s", keys, want, &p)
	}
	if _, err := NewWriter(s); !errors.Is(err, spec.ErrInvalid) {
		t.Errorf("NewWriter: %v, want spec.ErrInvalid", err)
	}
	if _, err := NewWriter(Schema{}); !errors.Is(err, spec.ErrInvalid) {
		t.Errorf("NewWriter without columns: %v, want spec.ErrInvalid", err)
	}
}

func TestStateGrowsByLessThan100BytesPerColumnAndRowGroup(t *testing.T) {
	w, err := NewWriter(Schema{Columns: benchColumns})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("long string, ", 100) // statistics would hold it twice
	for g := range 3 {
		for i, r := range benchRecords() {
			if i == 7 {
				r = []byte(`{"id": 1, "user": "` + long + `", "ts": 0}`)
			}
			if err := w.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.FlushRowGroup(); err != nil {
			t.Fatal(err)
		}
		st := w.State()
		if n := len(st.RowGroups[g]); n >= 100*len(benchColumns) {
			t.Errorf("row group %d takes %d bytes of State", g, n)
		}
	}
}

func TestEmptyStringIsAValueNotANull(t *testing.T) {
	cols := []Column{{Name: "s", Type: TypeString, Nullable: true}, {Name: "j", Type: TypeBytes, Nullable: true}}
	w, err := NewWriter(Schema{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte(`{"s": "", "j": ""}`)); err != nil {
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
	if _, rows := readGo(t, append(b, footer...), cols); len(rows) != 1 || rows[0][0] != "" || rows[0][1] != "" {
		t.Fatalf("rows %#v, want one row of empty values", rows)
	}
}

// AppendRowGroup appends to a sink's buffer, after what it holds, the bytes
// FlushRowGroup returns; State counts only the row groups' bytes.
func TestAppendRowGroupAppendsWhatFlushRowGroupReturns(t *testing.T) {
	values := [][]byte{[]byte(`{"id":"a","u":"x","h":"y","amount":1.5,"status":"paid","p":"q"}`),
		[]byte(`{"id":"b","u":"x","h":"z","amount":2,"status":"new","p":"q"}`)}
	flushed, appended := newWriterT(t), newWriterT(t)
	dst := make([]byte, 3, 10)
	copy(dst, "abc")
	var want []byte
	for g := range 3 {
		for _, v := range values {
			if err := flushed.Append(v); err != nil {
				t.Fatal(err)
			}
			if err := appended.Append(v); err != nil {
				t.Fatal(err)
			}
		}
		b, err := flushed.FlushRowGroup()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
		if dst, err = appended.AppendRowGroup(dst); err != nil {
			t.Fatal(err)
		}
		if string(dst[:3]) != "abc" || !bytes.Equal(dst[3:], want) {
			t.Fatalf("row group %d: appended %d bytes after %q, want the %d FlushRowGroup returned", g, len(dst)-3, dst[:3], len(want))
		}
		if s := appended.State().Size; s != int64(len(want)) {
			t.Fatalf("row group %d: state size %d, want %d", g, s, len(want))
		}
	}
	if got, err := appended.AppendRowGroup(dst); err != nil || len(got) != len(dst) {
		t.Fatalf("with no rows buffered: %d bytes, %v; want dst as it was", len(got), err)
	}
}

func newWriterT(t *testing.T) *Writer {
	t.Helper()
	w, err := NewWriter(ordersSchema)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
