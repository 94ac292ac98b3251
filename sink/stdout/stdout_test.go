package stdout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

func TestStdoutPrintsOneLinePerValueByPreCommitAndCommitsNothing(t *testing.T) {
	var out bytes.Buffer
	s := New(&out, Config{})
	w, err := s.NewWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`{"a":1}`, `b`} {
		if err := w.Write(ctx, &record.Record{Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("printed %q before PreCommit, want buffered", out.String())
	}
	cs, err := w.PreCommit(ctx, 1)
	if err != nil || cs != nil {
		t.Fatalf("PreCommit = %v, %v; want no committables", cs, err)
	}
	if out.String() != "{\"a\":1}\nb\n" {
		t.Fatalf("printed %q", out.String())
	}
	w.Committed(1)
	if err := errors.Join(s.Commit(ctx, cs), s.Recover(ctx, nil), w.Close(), s.Close()); err != nil {
		t.Fatal(err)
	}
}

// failingWriter fails every write while fail is set.
type failingWriter struct {
	bytes.Buffer
	fail bool
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, syscall.EPIPE
	}
	return f.Buffer.Write(p)
}

func TestStdoutKeepsLinesAWriteFailedAndPrintsThemLater(t *testing.T) {
	out := &failingWriter{fail: true}
	w, _ := New(out, Config{}).NewWriter(0)
	_ = w.Write(ctx, &record.Record{Value: []byte("x")})
	if _, err := w.PreCommit(ctx, 1); !errors.Is(err, sink.ErrNotDurable) || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("PreCommit = %v, want ErrNotDurable wrapping EPIPE", err)
	}
	out.fail = false
	_ = w.Write(ctx, &record.Record{Value: []byte("y")})
	if err := w.Close(); err != nil || out.String() != "x\ny\n" {
		t.Fatalf("Close = %v, printed %q", err, out.String())
	}
}

func TestStdoutParallelWritersNeverInterleaveWithinALine(t *testing.T) {
	var out bytes.Buffer
	s := New(&out, Config{})
	var wg sync.WaitGroup
	for i := range 4 {
		w, _ := s.NewWriter(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5000 { // several buffer flushes each
				_ = w.Write(ctx, &record.Record{Value: fmt.Appendf(nil, "writer-%d-record-%d-%s", i, j, strings.Repeat("z", 20))})
			}
			_, _ = w.PreCommit(ctx, 1)
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 20000 {
		t.Fatalf("%d lines, want 20000", len(lines))
	}
	for _, l := range lines {
		var i, j int
		if _, err := fmt.Sscanf(l, "writer-%d-record-%d-", &i, &j); err != nil || len(l) != len(fmt.Sprintf("writer-%d-record-%d-", i, j))+20 {
			t.Fatalf("torn line %q", l)
		}
	}
}

var ctx = context.Background()

// TestStdoutRawFormatAddsNothingBetweenValues: format raw writes the values'
// bytes as they are (it used to be accepted and ignored).
func TestStdoutRawFormatAddsNothingBetweenValues(t *testing.T) {
	var out bytes.Buffer
	w, _ := New(&out, Config{Format: FormatRaw}).NewWriter(0)
	for _, v := range []string{"ab", "c\n", "d"} {
		if err := w.Write(ctx, &record.Record{Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.PreCommit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "abc\nd" {
		t.Errorf("raw output %q, want %q", got, "abc\nd")
	}
}
