package file

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/sink"
)

// TestFileOperationsFollowTheDocumentedOrder runs testdata/protocol.txt:
// every file operation of the file sink (vfs.WithLogging) is the trace, so
// the order the package documentation promises (a part fsynced before its
// rename to pending, the directory fsynced after every rename, pending
// renamed into place at commit) is checked. Commands:
//
//	open roll=N            the sink (roll_size N bytes) and writer 0
//	write from=A to=B      records A..B-1
//	precommit id=N         PreCommit of barrier N (the asynchronous rest run at once)
//	commit                 Commit of every committable so far
//	recover                Recover with the committables so far, after closing the writer
func TestFileOperationsFollowTheDocumentedOrder(t *testing.T) {
	mem := vfs.NewMem()
	var ops []string
	fs := vfs.WithLogging(mem, func(format string, args ...any) {
		ops = append(ops, fmt.Sprintf(format, args...))
	})
	var (
		s  *File
		w  sink.Writer
		cs []sink.Committable
	)
	datadriven.RunTest(t, "testdata/protocol.txt", func(t *testing.T, d *datadriven.TestData) string {
		ops = ops[:0]
		switch d.Cmd {
		case "open":
			var roll int
			d.ScanArgs(t, "roll", &roll)
			s = newTestFile(t, fs, func(c *Config) { c.RollSize = config.ByteSize(roll) })
			w = newTestWriter(t, s, 0)
		case "write":
			var from, to int
			d.ScanArgs(t, "from", &from)
			d.ScanArgs(t, "to", &to)
			writeRange(t, w, from, to)
		case "precommit":
			var id int
			d.ScanArgs(t, "id", &id)
			cs = preCommit(t, w, checkpoint.ID(id))
		case "commit":
			commit(t, s, cs)
		case "recover":
			_ = w.Close()
			ops = ops[:0]
			if err := s.Recover(ctx, cs); err != nil {
				return "error: " + err.Error()
			}
		default:
			t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
		}
		if len(ops) == 0 {
			return "(no file operation)"
		}
		return strings.Join(ops, "\n")
	})
}
