package s3

import (
	"strings"
	"testing"

	"github.com/connector-dev/connector/record"
)

// TestAFormatChangeCompletesTheOpenObject: an open jsonl object restored
// by a restart whose config says format: raw is completed as it is (as a
// parquet object was, filefmt.ErrSchemaChanged), and the raw values go to
// a .raw object. It went on with raw bytes: the .jsonl object had a raw
// value glued to its last line.
func TestAFormatChangeCompletesTheOpenObject(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	restored := preCommit(t, w, 1)
	_ = w.Close()

	s2 := newTestSink(t, f, func(c *Config) { c.Format = "raw" })
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	r := newTestWriter(t, s2, 0)
	if err := r.Write(ctx, &record.Record{Topic: "orders", Offset: 10, Value: []byte("RAW")}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	r.EndInput()
	commit(t, s2, preCommit(t, r, 2))
	var jsonl, raw int
	for _, k := range f.keys(jobDir) {
		data, _ := f.object(k)
		switch b := string(data); {
		case strings.Contains(b, "RAW") && strings.Contains(b, `{"id":`):
			t.Fatalf("%s holds jsonl lines and a raw value: ...%q", k, data[len(data)-30:])
		case strings.HasSuffix(k, ".jsonl"):
			jsonl += strings.Count(b, "\n")
		case strings.HasSuffix(k, ".raw") && b == "RAW":
			raw++
		}
	}
	if jsonl != 10 || raw != 1 {
		t.Fatalf("visible: %d jsonl lines and %d raw objects holding RAW, want the 10 lines and 1", jsonl, raw)
	}
}
