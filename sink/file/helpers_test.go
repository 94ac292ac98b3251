package file

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

const testDir = "/data/out"

var ctx = context.Background()

func newTestFile(t *testing.T, fs vfs.FS, mod func(*Config)) *File {
	t.Helper()
	cfg := Config{Path: testDir, Job: "orders", RollSize: 1 << 20, RollOnCheckpoint: true}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg, fs, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	return s
}

func newTestWriter(t *testing.T, s *File, instance int) sink.Writer {
	t.Helper()
	w, err := s.NewWriter(instance)
	if err != nil {
		t.Fatalf("NewWriter(%d): %v", instance, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// value is the jsonl value of record id.
func value(id int) []byte {
	return fmt.Appendf(nil, `{"id":%d,"pad":"%s"}`, id, strings.Repeat("x", id%37))
}

func rec(id int) *record.Record {
	return &record.Record{Topic: "orders", Partition: 0, Offset: int64(id), Value: value(id)}
}

// writeRange writes records [from, to) with w.
func writeRange(t *testing.T, w sink.Writer, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := w.Write(ctx, rec(i)); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

func preCommit(t *testing.T, w sink.Writer, id checkpoint.ID) []sink.Committable {
	t.Helper()
	cs, err := w.PreCommit(ctx, id)
	if err != nil {
		t.Fatalf("PreCommit(%d): %v", id, err)
	}
	return cs
}

func commit(t *testing.T, s sink.Sink, cs []sink.Committable) {
	t.Helper()
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// listDir splits the directory into visible and hidden names, each sorted.
func listDir(t *testing.T, fs vfs.FS) (visible, hidden []string) {
	t.Helper()
	names, err := fs.List(testDir)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".lock.") {
			continue // a job's lock on the directory, not output
		}
		if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			hidden = append(hidden, n)
		} else {
			visible = append(visible, n)
		}
	}
	slices.Sort(visible)
	slices.Sort(hidden)
	return visible, hidden
}

// visibleLines reads every line of every visible file, as a reader would.
func visibleLines(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	visible, _ := listDir(t, fs)
	var lines []string
	for _, name := range visible {
		f, err := fs.Open(fs.PathJoin(testDir, name))
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		_ = f.Close()
	}
	return lines
}

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(fs.PathJoin(testDir, name))
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

// assertExactlyOnce checks that the visible output holds each of ids
// exactly once and nothing else.
func assertExactlyOnce(t *testing.T, fs vfs.FS, ids []int) {
	t.Helper()
	want := make(map[string]int, len(ids))
	for _, id := range ids {
		want[string(value(id))]++
	}
	got := make(map[string]int)
	for _, l := range visibleLines(t, fs) {
		got[l]++
	}
	missing, dup, extra := 0, 0, 0
	for v := range want {
		switch got[v] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	for v := range got {
		if want[v] == 0 {
			extra++
		}
	}
	if missing+dup+extra > 0 {
		t.Fatalf("visible output: %d missing, %d duplicated, %d unexpected of %d records", missing, dup, extra, len(ids))
	}
}

func ids(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
