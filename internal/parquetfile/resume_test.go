package parquetfile

import (
	"encoding/json"
	"os"
	"testing"
)

// TestResumeContinuesAFileOfTheParquetGoWriter resumes a file, and its
// State, written when parquet-go encoded the row groups: the file goes on
// with row groups of today's encodings, and is read whole (by pyarrow too:
// see pyarrow_test.go).
func TestResumeContinuesAFileOfTheParquetGoWriter(t *testing.T) {
	file, n := resumedParquetGoFile(t)
	_, rows := readGo(t, file, allColumns)
	checkRows(t, rows, 0, n)
}

// resumedParquetGoFile continues testdata/parquetgo-30 (records 0..29 of
// allColumns in two row groups, and the State after them) to 60 records,
// with a crash on the way.
func resumedParquetGoFile(t *testing.T) ([]byte, int) {
	file, err := os.ReadFile("testdata/parquetgo-30.parquet")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := os.ReadFile("testdata/parquetgo-30.state.json")
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(stored, &st); err != nil {
		t.Fatal(err)
	}
	k := &sink{t: t, schema: Schema{Columns: allColumns}, file: file, stored: stored, next: 30, checkpointed: 30}
	if k.w, err = Resume(k.schema, st); err != nil {
		t.Fatal(err)
	}
	k.append(20)
	k.checkpoint()
	k.crash()
	k.append(10)
	return k.roll(), k.next
}
