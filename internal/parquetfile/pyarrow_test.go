package parquetfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pyarrowFile is what testdata/read_parquet.py prints for one file.
type pyarrowFile struct {
	File         string           `json:"file"`
	Rows         int              `json:"rows"`
	MetadataRows int              `json:"metadata_rows"`
	RowGroups    int              `json:"row_groups"`
	Codecs       []string         `json:"codecs"`
	Schema       [][3]any         `json:"schema"`
	RawColumns   map[string][]any `json:"columns"`
}

// arrowTypes is the Arrow type pyarrow reads for each column type.
var arrowTypes = map[string]string{
	TypeString: "string", TypeInt32: "int32", TypeInt64: "int64", TypeFloat: "float",
	TypeDouble: "double", TypeBoolean: "bool", TypeTimestampMS: "timestamp[ms, tz=UTC]",
	TypeTimestampUS: "timestamp[us, tz=UTC]", TypeDate: "date32[day]", TypeBytes: "binary",
	TypeJSON: "extension<arrow.json>",
}

// TestPyarrowReadsEveryRowOfEveryCodec has an independent reader, Apache
// Arrow's, read files written across checkpoints and crashes, with each
// codec, a file of large row groups, a file begun by the parquet-go
// encoder and continued, and an empty file. It needs scripts/pyarrow, which installs pyarrow
// from PyPI on first use; without it the test fails.
func TestPyarrowReadsEveryRowOfEveryCodec(t *testing.T) {
	dir := t.TempDir()
	codecs := []string{CompressionZstd, CompressionSnappy, CompressionGzip, CompressionNone}
	rows := map[string]int{}
	var paths []string
	for _, codec := range codecs {
		file, n := crashyFile(t, Schema{Columns: allColumns, Compression: codec})
		path := filepath.Join(dir, codec+".parquet")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		paths, rows[path] = append(paths, path), n
	}
	// Row groups of many pages, which the files above have not.
	pages, n := pagesFile(t, Schema{Columns: allColumns}, 30_000, 5_000)
	path := filepath.Join(dir, "pages.parquet")
	if err := os.WriteFile(path, pages, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, rows[path] = append(paths, path), n
	// A file begun when parquet-go encoded the row groups.
	resumed, n := resumedParquetGoFile(t)
	path = filepath.Join(dir, "resumed.parquet")
	if err := os.WriteFile(path, resumed, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, rows[path] = append(paths, path), n
	w, err := NewWriter(Schema{Columns: allColumns})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := w.Footer()
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "empty.parquet")
	if err := os.WriteFile(path, empty, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, rows[path] = append(paths, path), 0

	script, err := filepath.Abs("../../scripts/pyarrow")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, append([]string{"python", "testdata/read_parquet.py"}, paths...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("scripts/pyarrow could not read the files (pyarrow must be installable): %v\n%s", err, stderr.String())
	}

	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	for i, path := range paths {
		var got pyarrowFile
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("output for %s: %v\n%s", path, err, stderr.String())
		}
		name := filepath.Base(path)
		if got.File != path || got.Rows != rows[path] || got.MetadataRows != rows[path] {
			t.Fatalf("%s: pyarrow read %d rows (metadata %d), want %d", name, got.Rows, got.MetadataRows, rows[path])
		}
		if i < len(codecs) {
			want := strings.ToUpper(codecs[i])
			if want == "NONE" {
				want = "UNCOMPRESSED"
			}
			if len(got.Codecs) != 1 || got.Codecs[0] != want || got.RowGroups != 5 {
				t.Errorf("%s: codecs %v in %d row groups, want %s in 5", name, got.Codecs, got.RowGroups, want)
			}
		}
		checkArrowSchema(t, name, got.Schema)
		for c, col := range allColumns {
			values := got.RawColumns[col.Name]
			if len(values) != rows[path] {
				t.Fatalf("%s: column %q has %d values", name, col.Name, len(values))
			}
			for r, v := range values {
				_, want := record(r)
				if err := sameValue(col.Type, v, want[c]); err != nil {
					t.Fatalf("%s: row %d column %q: %v", name, r, col.Name, err)
				}
			}
		}
	}
}

func checkArrowSchema(t *testing.T, name string, schema [][3]any) {
	t.Helper()
	if len(schema) != len(allColumns) {
		t.Fatalf("%s: %d columns, want %d", name, len(schema), len(allColumns))
	}
	for i, col := range allColumns {
		want := [3]any{col.Name, arrowTypes[col.Type], col.Nullable}
		if schema[i] != want {
			t.Errorf("%s: column %d is %v, want %v", name, i, schema[i], want)
		}
	}
}

// sameValue compares a value pyarrow printed (JSON, numbers as json.Number)
// with what record says it is.
func sameValue(typ string, got, want any) error {
	if got == nil || want == nil {
		if got != want {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	}
	var ok bool
	switch w := want.(type) {
	case string:
		if typ == TypeBytes {
			b, err := base64.StdEncoding.DecodeString(got.(string))
			ok = err == nil && string(b) == w
		} else {
			ok = got == w
		}
	case bool:
		ok = got == w
	case int32, int64:
		ok = got.(json.Number).String() == fmt.Sprint(w)
	case float32:
		f, err := strconv.ParseFloat(got.(json.Number).String(), 64)
		ok = err == nil && f == float64(w)
	case float64:
		f, err := strconv.ParseFloat(got.(json.Number).String(), 64)
		ok = err == nil && f == w
	}
	if !ok {
		return fmt.Errorf("got %#v, want %#v", got, want)
	}
	return nil
}
