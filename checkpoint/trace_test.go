package checkpoint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// The trace tests are datadriven tests (github.com/cockroachdb/datadriven) in
// the style of etcd-io/raft's interaction tests: testdata/coord/*.txt drive a
// Coordinator (trace_coord_test.go), testdata/align/*.txt an Aligner
// (trace_align_test.go). A test case is
//
//	command [positional...] [key=value] [key=(value, value)]
//	[input lines]
//	----
//	expected output
//
// Lines starting with '#' between test cases are comments. Run the tests with
// -rewrite to replace the expected output by what the code prints now.

// t0 is time 0 of the scripts' clock; scripts write times as offsets from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// commands returns d and then each of its input lines parsed as one more
// command of the same test case (blank lines and lines starting with '#'
// skipped), so that a test case may hold several commands whose output is
// printed together.
func commands(t *testing.T, d *datadriven.TestData) []*datadriven.TestData {
	t.Helper()
	cmds := []*datadriven.TestData{d}
	if d.Input == "" {
		return cmds
	}
	file, line := d.Pos, 0
	if i := strings.LastIndexByte(d.Pos, ':'); i >= 0 {
		file = d.Pos[:i]
		line, _ = strconv.Atoi(d.Pos[i+1:])
	}
	for i, l := range strings.Split(d.Input, "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		pos := fmt.Sprintf("%s:%d", file, line+1+i)
		cmd, args, err := datadriven.ParseLine(l)
		if err != nil {
			t.Fatalf("%s: %v", pos, err)
		}
		cmds = append(cmds, &datadriven.TestData{Pos: pos, Cmd: cmd, CmdArgs: args})
	}
	return cmds
}

// positional checks d's arguments and returns the positional ones: d must
// have exactly n arguments without a value first, then only key=value
// arguments whose keys are in named (scanned by the handler with ScanArgs or
// MaybeScanArgs).
func positional(t *testing.T, d *datadriven.TestData, n int, named ...string) []string {
	t.Helper()
	var pos []string
	for i, a := range d.CmdArgs {
		switch {
		case i < n && len(a.Vals) == 0:
			pos = append(pos, a.Key)
		case i < n:
			d.Fatalf(t, "%s: argument %d must be positional, got %s", d.Cmd, i+1, a)
		case len(a.Vals) == 0:
			d.Fatalf(t, "%s: want %d positional arguments, got %s as well", d.Cmd, n, a.Key)
		case !slices.Contains(named, a.Key):
			d.Fatalf(t, "%s: unknown argument %s (want %s)", d.Cmd, a.Key, strings.Join(named, ", "))
		}
	}
	if len(pos) < n {
		d.Fatalf(t, "%s: want %d positional arguments, got %d", d.Cmd, n, len(pos))
	}
	return pos
}

// scriptID parses a checkpoint id written in a script.
func scriptID(t *testing.T, d *datadriven.TestData, s string) ID {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		d.Fatalf(t, "%s: bad checkpoint id %q", d.Cmd, s)
	}
	return ID(n)
}
