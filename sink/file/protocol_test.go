package file

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/sink"
)

// TestFileOperationsFollowTheDocumentedOrder runs testdata/protocol.txt:
// every file operation of the file sink (vfs.WithLogging) is the trace, so
// the order the package documentation promises (a file fsynced, and its
// name in the directory, before the pre-commit that records it returns;
// rolled files renamed into place at commit; an open file cut back to its
// recorded size at recover) is checked. Commands:
//
//	open roll=N [span] [hours]
//	                       the sink (roll_size N bytes; span: files span
//	                       checkpoints, else roll_on_checkpoint; hours:
//	                       path_template dt={yyyy-MM-dd}/hour={HH}) and writer 0
//	write from=A to=B [hour=H]
//	                       records A..B-1 (of hour H of 2026-01-01)
//	precommit id=N         PreCommit of barrier N (the asynchronous rest run at once)
//	end                    EndInput: the next pre-commit rolls the open file
//	commit                 Commit of every committable so far
//	recover [id=N]         Recover with the committables of the last pre-commit
//	                       (of pre-commit N), after closing the writer
//	reopen                 writer 0 again (after recover: it resumes the open file)
func TestFileOperationsFollowTheDocumentedOrder(t *testing.T) {
	mem := vfs.NewMem()
	var ops []string
	fs := vfs.WithLogging(mem, func(format string, args ...any) {
		ops = append(ops, fmt.Sprintf(format, args...))
	})
	var (
		s    *File
		w    sink.Writer
		cs   []sink.Committable
		byID = map[int][]sink.Committable{}
	)
	datadriven.RunTest(t, "testdata/protocol.txt", func(t *testing.T, d *datadriven.TestData) string {
		ops = ops[:0]
		switch d.Cmd {
		case "open":
			var roll int
			d.ScanArgs(t, "roll", &roll)
			span, hours := d.HasArg("span"), d.HasArg("hours")
			if s != nil {
				_ = w.Close()
				_ = s.Close()
				ops = ops[:0]
			}
			s = newTestFile(t, fs, func(c *Config) {
				c.RollSize, c.RollOnCheckpoint, c.Writers = config.ByteSize(roll), !span, 1
				if hours {
					c.PathTemplate = "dt={yyyy-MM-dd}/hour={HH}"
				}
			})
			w = newTestWriter(t, s, 0)
			cs = nil
		case "end":
			w.(sink.InputEnder).EndInput()
		case "reopen":
			w = newTestWriter(t, s, 0)
		case "write":
			var from, to int
			d.ScanArgs(t, "from", &from)
			d.ScanArgs(t, "to", &to)
			var ts time.Time
			if d.HasArg("hour") {
				var h int
				d.ScanArgs(t, "hour", &h)
				ts = time.Date(2026, 1, 1, h, 30, 0, 0, time.UTC)
			}
			for i := from; i < to; i++ {
				r := rec(i)
				r.Timestamp = ts
				if err := w.Write(ctx, r); err != nil {
					t.Fatalf("Write(%d): %v", i, err)
				}
			}
		case "precommit":
			var id int
			d.ScanArgs(t, "id", &id)
			cs = preCommit(t, w, checkpoint.ID(id))
			byID[id] = cs
		case "commit":
			commit(t, s, cs)
		case "recover":
			restored := cs
			if d.HasArg("id") {
				var id int
				d.ScanArgs(t, "id", &id)
				restored = byID[id]
			}
			_ = w.Close()
			ops = ops[:0]
			if err := s.Recover(ctx, restored); err != nil {
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
