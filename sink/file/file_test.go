package file

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

func TestJSONLRoundTripWritesEachValueOnItsOwnLine(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	values := []string{`{"a":1}`, `[1,2,3]`, "{\n  \"b\": \"two\",\n  \"c\": [1,\n 2]\n}\n", `"s"`}
	want := []string{`{"a":1}`, `[1,2,3]`, `{"b":"two","c":[1,2]}`, `"s"`}
	for _, v := range values {
		if err := w.Write(ctx, &record.Record{Value: []byte(v)}); err != nil {
			t.Fatalf("Write(%q): %v", v, err)
		}
	}
	commit(t, s, preCommit(t, w, 1))
	visible, _ := listDir(t, fs)
	if len(visible) != 1 || !strings.HasSuffix(visible[0], ".jsonl") {
		t.Fatalf("visible files %v, want one .jsonl", visible)
	}
	if got := string(readFile(t, fs, visible[0])); got != strings.Join(want, "\n")+"\n" {
		t.Fatalf("file holds %q, want %q", got, strings.Join(want, "\n")+"\n")
	}
}

func TestJSONLRefusesUnframeableValuesAndTheWriterGoesOn(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	for _, bad := range []string{"", "{\"a\":\n", "{}\n{}", "not\njson"} {
		err := w.Write(ctx, &record.Record{Value: []byte(bad)})
		if !errors.Is(err, sink.ErrBadRecord) {
			t.Fatalf("Write(%q) = %v, want ErrBadRecord", bad, err)
		}
	}
	writeRange(t, w, 0, 3)
	commit(t, s, preCommit(t, w, 1))
	assertExactlyOnce(t, fs, ids(0, 3))
}

func TestRawWritesValueBytesWithoutSeparator(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, func(c *Config) { c.Format = FormatRaw })
	w := newTestWriter(t, s, 0)
	for _, v := range []string{"ab", "", "c\nd", "\x00e"} {
		if err := w.Write(ctx, &record.Record{Value: []byte(v)}); err != nil {
			t.Fatalf("Write(%q): %v", v, err)
		}
	}
	commit(t, s, preCommit(t, w, 1))
	visible, _ := listDir(t, fs)
	if len(visible) != 1 || visible[0] != "part-orders-000000000001-w0-0.raw" {
		t.Fatalf("visible files %v, want [part-orders-000000000001-w0-0.raw]", visible)
	}
	if got := string(readFile(t, fs, visible[0])); got != "abc\nd\x00e" {
		t.Fatalf("file holds %q", got)
	}
}

func TestNothingIsVisibleBeforeCommit(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, func(c *Config) { c.RollSize = 4 << 10 })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 500) // several rolled parts on disk
	if visible, hidden := listDir(t, fs); len(visible) != 0 || len(hidden) == 0 {
		t.Fatalf("after Write: visible %v, hidden %v; want only hidden", visible, hidden)
	}
	cs := preCommit(t, w, 1)
	visible, hidden := listDir(t, fs)
	if len(visible) != 0 {
		t.Fatalf("after PreCommit: visible %v, want none", visible)
	}
	for _, h := range hidden {
		if !strings.HasPrefix(h, inProgressPrefix) {
			t.Fatalf("after PreCommit: hidden %q is not in progress", h)
		}
	}
	commit(t, s, cs)
	if _, hidden := listDir(t, fs); len(hidden) != 0 {
		t.Fatalf("after Commit: hidden files %v remain", hidden)
	}
	assertExactlyOnce(t, fs, ids(0, 500))
}

func TestCommitMakesExactlyThePreCommittedRecordsVisible(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	cs := preCommit(t, w, 1)
	writeRange(t, w, 100, 150) // after the barrier: belongs to checkpoint 2
	commit(t, s, cs)
	assertExactlyOnce(t, fs, ids(0, 100))
	w.Committed(1)
	commit(t, s, preCommit(t, w, 2))
	assertExactlyOnce(t, fs, ids(0, 150))
}

func TestCommitTwiceIsANoOp(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	cs := preCommit(t, w, 1)
	commit(t, s, cs)
	commit(t, s, cs)
	assertExactlyOnce(t, fs, ids(0, 10))
}

func TestFailedCheckpointIsCommittedWithTheNextOneExactlyOnce(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	cs1 := preCommit(t, w, 1) // checkpoint 1 fails: never committed
	writeRange(t, w, 100, 200)
	cs2 := preCommit(t, w, 2)
	if len(cs1) != 1 || len(cs2) != 2 || cs2[0].Checkpoint != 1 || cs2[1].Checkpoint != 2 {
		t.Fatalf("PreCommit(2) returned %+v, want checkpoint 1's carried and 2's", cs2)
	}
	if visible, _ := listDir(t, fs); len(visible) != 0 {
		t.Fatalf("visible before commit: %v", visible)
	}
	commit(t, s, cs2)
	w.Committed(2)
	assertExactlyOnce(t, fs, ids(0, 200))
	if cs3 := preCommit(t, w, 3); len(cs3) != 0 {
		t.Fatalf("PreCommit(3) after Committed(2) with nothing written returned %+v, want none", cs3)
	}
}

func TestEmptyPreCommitReturnsOnlyCarriedOver(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	if cs := preCommit(t, w, 1); len(cs) != 0 {
		t.Fatalf("PreCommit with nothing written returned %+v", cs)
	}
	writeRange(t, w, 0, 5)
	cs2 := preCommit(t, w, 2)
	cs3 := preCommit(t, w, 3)
	if len(cs3) != 1 || cs3[0].Checkpoint != 2 || string(cs3[0].Data) != string(cs2[0].Data) {
		t.Fatalf("empty PreCommit(3) returned %+v, want only checkpoint 2's %+v", cs3, cs2)
	}
}

func TestCommittedForgetsOnlyCheckpointsUpToItsID(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	for id := checkpoint.ID(1); id <= 3; id++ {
		writeRange(t, w, int(id)*10, int(id)*10+10)
		preCommit(t, w, id)
	}
	w.Committed(2)
	cs := preCommit(t, w, 4)
	if len(cs) != 1 || cs[0].Checkpoint != 3 {
		t.Fatalf("after Committed(2): %+v, want only checkpoint 3's", cs)
	}
}

func TestRecoverCommitsRestoredAndRemovesEverythingElseOfItsJobOnly(t *testing.T) {
	fs := vfs.NewMem()
	small := func(c *Config) { c.RollSize = 2 << 10 }
	s := newTestFile(t, fs, small)
	w0 := newTestWriter(t, s, 0)
	w1 := newTestWriter(t, s, 1)
	writeRange(t, w0, 0, 100)
	writeRange(t, w1, 100, 200)
	restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...) // checkpoint 1 completes, never notified
	writeRange(t, w0, 200, 300)
	preCommit(t, w0, 2) // checkpoint 2 never completes
	writeRange(t, w0, 300, 400)
	writeRange(t, w1, 400, 500) // in progress, partly on disk (rolled)

	other := newTestFile(t, fs, func(c *Config) { c.Job = "orders-w1"; c.RollSize = 2 << 10 })
	ow := newTestWriter(t, other, 0)
	writeRange(t, ow, 1000, 1100)
	preCommit(t, ow, 7)
	_, otherHidden := listDir(t, fs)
	otherHidden = filterNames(otherHidden, "part-orders-w1-w")

	// Restart: a new sink on the same directory.
	_ = w0.Close()
	_ = w1.Close()
	_ = s.Close()
	s2 := newTestFile(t, fs, small)
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	assertExactlyOnce(t, fs, ids(0, 200))
	_, hidden := listDir(t, fs)
	if strings.Join(hidden, ",") != strings.Join(otherHidden, ",") {
		t.Fatalf("hidden after Recover %v, want only the other job's %v", hidden, otherHidden)
	}
	// Recovering again from the same checkpoint changes nothing.
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("second Recover: %v", err)
	}
	assertExactlyOnce(t, fs, ids(0, 200))
}

func filterNames(names []string, substr string) []string {
	var out []string
	for _, n := range names {
		if strings.Contains(n, substr) {
			out = append(out, n)
		}
	}
	return out
}

func TestRollBySizeStartsNewPartsIndependentOfCheckpoints(t *testing.T) {
	fs := vfs.NewMem()
	const roll = 1 << 10
	s := newTestFile(t, fs, func(c *Config) { c.RollSize = roll })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 300)
	cs := preCommit(t, w, 1)
	commit(t, s, cs)
	visible, _ := listDir(t, fs)
	var files []rename
	if err := json.Unmarshal(cs[0].Data, &struct{ Rolled *[]rename }{&files}); err != nil || len(files) != len(visible) {
		t.Fatalf("committable names %d files (%v), %d visible", len(files), err, len(visible))
	}
	if len(visible) < 10 {
		t.Fatalf("%d parts for %d records at roll size %d, want many", len(visible), 300, roll)
	}
	for _, name := range visible {
		// A part rolls after the record that reaches the size.
		if n := len(readFile(t, fs, name)); n > roll+100 {
			t.Fatalf("part %s holds %d bytes, roll size %d", name, n, roll)
		}
	}
	assertExactlyOnce(t, fs, ids(0, 300))
}

func TestRollByAgeStartsNewPartOnceThePartIsOld(t *testing.T) {
	fs := vfs.NewMem()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := newTestFile(t, fs, func(c *Config) { c.RollAge = time.Minute; c.Now = clock.Now })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	clock.Advance(59 * time.Second)
	writeRange(t, w, 10, 20) // still the first part
	clock.Advance(time.Second)
	writeRange(t, w, 20, 30) // second part
	clock.Advance(2 * time.Minute)
	writeRange(t, w, 30, 40) // third part
	commit(t, s, preCommit(t, w, 5))
	assertParts(t, fs, 20, "part-orders-000000000005-w0-0.jsonl", "part-orders-000000000005-w0-1.jsonl", "part-orders-000000000005-w0-2.jsonl")
	assertExactlyOnce(t, fs, ids(0, 40))
}

// assertParts checks that exactly the parts want are visible, the first
// holding first records.
func assertParts(t *testing.T, fs vfs.FS, first int, want ...string) {
	t.Helper()
	visible, _ := listDir(t, fs)
	if strings.Join(visible, " ") != strings.Join(want, " ") {
		t.Fatalf("visible %v, want %v", visible, want)
	}
	if n := strings.Count(string(readFile(t, fs, want[0])), "\n"); n != first {
		t.Fatalf("first part holds %d records, want %d", n, first)
	}
}

func TestRollByAgeInBatchesReadsTheClockOncePerBatch(t *testing.T) {
	fs := vfs.NewMem()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := newTestFile(t, fs, func(c *Config) { c.RollAge = time.Minute; c.Now = clock.Now })
	w := newTestWriter(t, s, 0)
	b, ok := w.(sink.Batcher)
	if !ok {
		t.Fatalf("the file writer does not implement Batcher")
	}
	b.BeginBatch()
	writeRange(t, w, 0, 10)
	clock.Advance(2 * time.Minute)
	writeRange(t, w, 10, 20) // same batch: the part's age is read at BeginBatch
	b.BeginBatch()
	writeRange(t, w, 20, 30) // the part is old now: a second part
	commit(t, s, preCommit(t, w, 5))
	assertParts(t, fs, 20, "part-orders-000000000005-w0-0.jsonl", "part-orders-000000000005-w0-1.jsonl")
	assertExactlyOnce(t, fs, ids(0, 30))
}

func TestCommitOfOutputThatVanishedIsErrCommitLost(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	cs := preCommit(t, w, 1)
	if err := fs.Remove(fs.PathJoin(testDir, ".inprogress.part-orders-w0-000000000001-0.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, cs); !errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Commit = %v, want ErrCommitLost", err)
	}
	_ = w.Close()
	if err := s.Recover(ctx, cs); !errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Recover = %v, want ErrCommitLost", err)
	}
}

func TestCommitRefusesCommittablesItDidNotProduce(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	for _, data := range []string{`not json`, `{"files":["../etc/passwd"]}`, `{"files":["part-other-w0-1-0.jsonl"]}`,
		`{"files":[".pending.part-orders-w0-1-0.jsonl"]}`,
		`{"rolled":[{"from":"../x","to":"part-orders-000000000001-w0-0.jsonl"}]}`,
		`{"rolled":[{"from":".inprogress.part-orders-w0-000000000001-0.jsonl","to":"part-other-000000000001-w0-0.jsonl"}]}`,
		`{"open":{"name":"/etc/passwd","size":1}}`} {
		err := s.Commit(ctx, []sink.Committable{{Checkpoint: 1, Data: json.RawMessage(data)}})
		if !errors.Is(err, sink.ErrBadCommittable) {
			t.Fatalf("Commit(%s) = %v, want ErrBadCommittable", data, err)
		}
	}
}

func TestCommitStopsWhenItsContextIsDone(t *testing.T) {
	s := newTestFile(t, vfs.NewMem(), nil)
	c, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(c, []sink.Committable{{Checkpoint: 1}}); !errors.Is(err, sink.ErrCommitFailed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit = %v, want ErrCommitFailed wrapping context.Canceled", err)
	}
}

func TestNewFileRefusesBadConfigNamingTheKey(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Path = "" }, "sink.path"},
		{func(c *Config) { c.Format = "csv" }, "sink.format"},
		{func(c *Config) { c.RollSize = -1 }, "sink.roll_size"},
		{func(c *Config) { c.RollAge = -time.Second }, "sink.roll_age"},
		{func(c *Config) { c.Job = "" }, "name"},
		{func(c *Config) { c.Job = "a/b" }, "name"},
		{func(c *Config) { c.Job = ".hidden" }, "name"},
	} {
		cfg := Config{Path: testDir, Job: "orders"}
		tc.mod(&cfg)
		_, err := New(cfg, vfs.NewMem(), zerolog.Nop())
		if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want+":") {
			t.Fatalf("New(%+v) = %v, want ErrInvalidConfig naming %s", cfg, err, tc.want)
		}
		if key, _ := cfgkey.Of(err); key != tc.want {
			t.Errorf("New(%+v): key %q attached, want %s (its line is printed)", cfg, key, tc.want)
		}
	}
}

func TestWriterInstanceIsOpenAtMostOnceAndClosedWriterRefusesWork(t *testing.T) {
	s := newTestFile(t, vfs.NewMem(), nil)
	w, err := s.NewWriter(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewWriter(3); err == nil {
		t.Fatal("second NewWriter(3) succeeded")
	}
	if _, err := s.NewWriter(-1); err == nil {
		t.Fatal("NewWriter(-1) succeeded")
	}
	writeRange(t, w, 0, 3)
	if err := s.Recover(ctx, nil); err == nil {
		t.Fatal("Recover with a writer open succeeded")
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Write(ctx, rec(1)); !errors.Is(err, sink.ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	if _, err := w.PreCommit(ctx, 1); !errors.Is(err, sink.ErrClosed) {
		t.Fatalf("PreCommit after Close = %v", err)
	}
	w2, err := s.NewWriter(3)
	if err != nil {
		t.Fatalf("NewWriter(3) after Close: %v", err)
	}
	_ = w2.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCommittedAndCommitMayRunConcurrentlyWithTheWriter(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, func(c *Config) { c.RollSize = 4 << 10 })
	w := newTestWriter(t, s, 0)
	notify := make(chan []sink.Committable, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the runtime's notifier
		defer wg.Done()
		for cs := range notify {
			if err := s.Commit(ctx, cs); err != nil {
				t.Errorf("Commit: %v", err)
			}
			w.Committed(cs[len(cs)-1].Checkpoint)
		}
	}()
	for id := 1; id <= 20; id++ {
		writeRange(t, w, (id-1)*50, id*50)
		notify <- preCommit(t, w, checkpoint.ID(id))
	}
	close(notify)
	wg.Wait()
	assertExactlyOnce(t, fs, ids(0, 1000))
}

// TestASecondProcessOfTheJobCannotShareTheOutputDirectory: the job's lock
// on sink.path refuses a second sink of the same job at once, naming what
// to do; another job may share the directory.
func TestASecondProcessOfTheJobCannotShareTheOutputDirectory(t *testing.T) {
	fs := vfs.NewMem()
	first := newTestFile(t, fs, nil)
	_, err := New(Config{Path: testDir, Job: "orders"}, fs, zerolog.Nop())
	if !errors.Is(err, sink.ErrInUse) || !strings.Contains(err.Error(), "another instance of job orders") {
		t.Fatalf("second sink of job orders: %v, want ErrInUse", err)
	}
	if _, err := New(Config{Path: testDir, Job: "refunds"}, fs, zerolog.Nop()); err != nil {
		t.Fatalf("another job in the same directory: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Path: testDir, Job: "orders"}, fs, zerolog.Nop()); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}

// TestCommittedAfterListsTheOutputOfLaterCheckpoints: what the runtime asks
// before falling back to an older checkpoint.
func TestCommittedAfterListsTheOutputOfLaterCheckpoints(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, nil)
	w := newTestWriter(t, s, 0)
	for id := checkpoint.ID(1); id <= 3; id++ {
		writeRange(t, w, int(id)*10, int(id)*10+5)
		commit(t, s, preCommit(t, w, id))
		w.Committed(id)
	}
	got, err := s.CommittedAfter(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"part-orders-000000000002-w0-0.jsonl", "part-orders-000000000003-w0-0.jsonl"}; !slices.Equal(got, want) {
		t.Errorf("CommittedAfter(1) = %v, want %v", got, want)
	}
	if got, err := s.CommittedAfter(ctx, 3); err != nil || len(got) != 0 {
		t.Errorf("CommittedAfter(3) = %v, %v; want none", got, err)
	}
}
