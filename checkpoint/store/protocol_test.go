package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// TestFileOperationsFollowTheDocumentedOrder runs testdata/protocol.txt:
// every file operation the store performs (vfs.WithLogging) is the trace,
// so the write protocol of doc.go (write, fsync, rename, fsync the
// directory; state files deleted before the metadata that lists them) is a
// checked artifact, not a comment. Commands:
//
//	open retained=N            opens the store (prints its operations)
//	state                      creates (silently) the state files listed in the input
//	persist id=N               Persist of checkpoint N, referencing the input's files
//	collect                    Collect: retention, released files, empty directories
//	release                    Release of the input's paths (prints nothing)
//	clean                      CleanStateRoot
func TestFileOperationsFollowTheDocumentedOrder(t *testing.T) {
	mem := newMem(t)
	var ops []string
	fs := vfs.WithLogging(mem, func(format string, args ...any) {
		ops = append(ops, fmt.Sprintf(format, args...))
	})
	var s *Store
	datadriven.RunTest(t, "testdata/protocol.txt", func(t *testing.T, d *datadriven.TestData) string {
		ops = ops[:0]
		lines := strings.Fields(d.Input)
		switch d.Cmd {
		case "open":
			var retained int
			d.ScanArgs(t, "retained", &retained)
			var err error
			if s, err = Open(fs, testDir, testState, retained, zerolog.Nop()); err != nil {
				return "error: " + err.Error()
			}
			t.Cleanup(func() { _ = s.Close() })
		case "state":
			writeState(t, mem, lines...)
			return "ok"
		case "persist":
			var id int
			d.ScanArgs(t, "id", &id)
			if err := s.Persist(meta(checkpoint.ID(id), lines...)); err != nil {
				return "error: " + err.Error()
			}
		case "collect":
			s.Collect()
		case "release":
			s.Release(lines...)
			return "ok"
		case "clean":
			deleted, err := s.CleanStateRoot()
			if err != nil {
				return "error: " + err.Error()
			}
			ops = append(ops, fmt.Sprintf("deleted %v", deleted))
		default:
			t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
		}
		if len(ops) == 0 {
			return "(no file operation)"
		}
		return strings.Join(ops, "\n")
	})
}
