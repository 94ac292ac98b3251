package file

import (
	"strings"

	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// TestAnEmptyRawValueOpensNoPart: a raw record with an empty value (a
// Kafka tombstone) opened a part that got no bytes; rolled at the
// checkpoint, its file was never created, and the commit (and every
// Recover after it) failed with ErrCommitLost: the job could not go on.
// It opens none now; a value after it is written.
func TestAnEmptyRawValueOpensNoPart(t *testing.T) {
	mem := vfs.NewMem()
	s := newTestFile(t, mem, func(c *Config) { c.Format = FormatRaw })
	w := newTestWriter(t, s, 0)
	if err := w.Write(ctx, &record.Record{Topic: "orders", Offset: 0, Value: nil}); err != nil {
		t.Fatalf("Write(empty raw value): %v", err)
	}
	cs := preCommit(t, w, 1)
	if len(cs) != 0 {
		t.Fatalf("a checkpoint of one empty raw value pre-committed %d committables, want none", len(cs))
	}
	if err := w.Write(ctx, &record.Record{Topic: "orders", Offset: 1, Value: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	cs = append(cs, preCommit(t, w, 2)...)
	cerr := s.Commit(ctx, cs)
	_ = w.Close()
	_ = s.Close()
	// The restart from checkpoint 1 fails the same way, every time.
	s2 := newTestFile(t, mem, func(c *Config) { c.Format = FormatRaw })
	rerr := s2.Recover(ctx, cs)
	if cerr != nil || rerr != nil {
		t.Fatalf("Commit: %v; Recover: %v", cerr, rerr)
	}
	visible, _ := listDir(t, mem)
	if len(visible) != 1 || string(readFile(t, mem, visible[0])) != "v1" {
		t.Fatalf("visible: %v, want one part holding v1", visible)
	}
}

// TestAFormatChangeClosesTheOpenFile: an open jsonl file restored by a
// restart whose config says format: raw is closed and committed as it is
// (as a parquet one was), and the raw values go to a .raw file. It went
// on with raw bytes: the committed file held jsonl lines and raw values.
func TestAFormatChangeClosesTheOpenFile(t *testing.T) {
	mem := vfs.NewMem()
	s := newTestFile(t, mem, span(1<<20))
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	restored := preCommit(t, w, 1)
	_ = w.Close()
	_ = s.Close()

	s2 := newTestFile(t, mem, func(c *Config) { span(1 << 20)(c); c.Format = FormatRaw })
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	r := newTestWriter(t, s2, 0)
	if err := r.Write(ctx, &record.Record{Topic: "orders", Offset: 10, Value: []byte("RAW")}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	r.(sink.InputEnder).EndInput()
	commit(t, s2, preCommit(t, r, 2))
	visible, _ := listDir(t, mem)
	var lines, raw int
	for _, name := range visible {
		b := string(readFile(t, mem, name))
		switch {
		case strings.Contains(b, "RAW") && strings.Contains(b, `{"id":`):
			t.Fatalf("%s holds jsonl lines and a raw value: ...%q", name, b[len(b)-30:])
		case strings.HasSuffix(name, ".jsonl"):
			lines += strings.Count(b, "\n")
		case strings.HasSuffix(name, ".raw") && b == "RAW":
			raw++
		}
	}
	if lines != 10 || raw != 1 {
		t.Fatalf("visible: %d jsonl lines and %d raw files holding RAW (%v), want the 10 lines and 1", lines, raw, visible)
	}
}
