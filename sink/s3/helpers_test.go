package s3

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/s3conn"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

var ctx = context.Background()

const (
	testBucket = "bucket"
	testJob    = "orders"
	testPart   = 1 << 10 // part_size of the unit tests (the fake takes 1 KiB parts)
	jobDir     = testJob + "/"
	tailsDir   = "_connector/" + testJob + "/tails/"
)

// clock is a settable clock for roll_age.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func testConfig(f *fakeS3, mod func(*Config)) Config {
	cfg := Config{
		Bucket: testBucket, Job: testJob, Parallelism: 1,
		Config:   s3conn.Config{AccessKeyID: "id", SecretAccessKey: config.NewSecret("secret")},
		PartSize: testPart, RollSize: 8 * testPart, RollAge: time.Hour,
		Now: newClock().Now, minPartSize: testPart, client: f,
	}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

func newTestSink(t *testing.T, f *fakeS3, mod func(*Config)) *Sink {
	t.Helper()
	s, err := New(testConfig(f, mod), zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func newTestWriter(t *testing.T, s *Sink, instance int) *writer {
	t.Helper()
	w, err := s.NewWriter(instance)
	if err != nil {
		t.Fatalf("NewWriter(%d): %v", instance, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w.(*writer)
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

// checkpointed pre-commits id, commits it and tells the writer.
func checkpointed(t *testing.T, s sink.Sink, w sink.Writer, id checkpoint.ID) []sink.Committable {
	t.Helper()
	cs := preCommit(t, w, id)
	commit(t, s, cs)
	w.Committed(id)
	return cs
}

// visibleLines reads every line of every visible object, in key order.
func visibleLines(t *testing.T, f *fakeS3) []string {
	t.Helper()
	var lines []string
	for _, k := range f.keys(jobDir) {
		data, _ := f.object(k)
		if len(data) == 0 || data[len(data)-1] != '\n' {
			t.Fatalf("%s does not end with a newline (%d bytes)", k, len(data))
		}
		for l := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
			lines = append(lines, l)
		}
	}
	return lines
}

func ids(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// assertExactlyOnce checks that the visible objects hold the records of
// want, each once, and nothing else.
func assertExactlyOnce(t *testing.T, f *fakeS3, want []int) {
	t.Helper()
	lines := visibleLines(t, f)
	got := map[string]int{}
	for _, l := range lines {
		got[l]++
	}
	for _, id := range want {
		v := string(value(id))
		if got[v] != 1 {
			t.Errorf("record %d is visible %d times", id, got[v])
		}
		delete(got, v)
	}
	for l, n := range got {
		t.Errorf("unexpected line %q (%d times)", l, n)
	}
	if len(lines) != len(want) && !t.Failed() {
		t.Errorf("%d lines visible, want %d", len(lines), len(want))
	}
}

// decodeAll decodes committables (without checking them: see
// names.decode). For the tests' convenience, Open is set to the only open
// object when there is exactly one.
func decodeAll(t *testing.T, cs []sink.Committable) []committable {
	t.Helper()
	var out []committable
	for _, c := range cs {
		var d committable
		if err := json.Unmarshal(c.Data, &d); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if d.Open != nil {
			t.Fatalf("committable %s records an open object in the former field", c.Data)
		}
		if len(d.Opens) == 1 {
			d.Open = d.Opens[0]
		}
		out = append(out, d)
	}
	return out
}

// assertClean checks that no upload and no delta is left.
func assertClean(t *testing.T, f *fakeS3) {
	t.Helper()
	if u := f.openUploads(); len(u) != 0 {
		t.Errorf("uploads left: %v", u)
	}
	if d := f.keys(tailsDir); len(d) != 0 {
		t.Errorf("deltas left: %v", d)
	}
}
