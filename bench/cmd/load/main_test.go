package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRowValueAndLineHoldTheSameRow: a value of the rows layout is JSON of
// exactly the size asked, with the fields of the table's columns, and the
// COPY line of the same row holds the same values.
func TestRowValueAndLineHoldTheSameRow(t *testing.T) {
	for _, i := range []int{0, 7, 123456, 1_000_001, 9_999_999, 123_456_789} {
		v, err := RowValue(nil, i, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 100 {
			t.Errorf("row %d: value of %d bytes, want 100: %s", i, len(v), v)
		}
		var row struct {
			ID  int64  `json:"id"`
			U   int64  `json:"u"`
			H   int64  `json:"h"`
			TS  string `json:"ts"`
			Pad string `json:"pad"`
		}
		if err := json.Unmarshal(v, &row); err != nil {
			t.Fatalf("row %d: %v: %s", i, err, v)
		}
		ts, err := time.Parse(time.RFC3339Nano, row.TS)
		if row.ID != int64(i) || row.U != int64(i%uMod) || row.H != int64(i%hMod) || err != nil ||
			!ts.Equal(rowsEpoch.Add(time.Duration(i)*time.Millisecond)) || row.Pad[0] != byte('a'+i%26) {
			t.Errorf("row %d: %+v (ts %v)", i, row, err)
		}
		line, err := RowLine(nil, i, 100)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{strconv.Itoa(i), strconv.Itoa(i % uMod), strconv.Itoa(i % hMod), row.TS, row.Pad}, "\t") + "\n"
		if string(line) != want {
			t.Errorf("row %d: COPY line %q, want %q", i, line, want)
		}
	}
	if _, err := RowValue(nil, 1, 40); err == nil {
		t.Error("a 40-byte row was made")
	}
}
