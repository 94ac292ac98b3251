package file

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	_ "github.com/connector-dev/connector/source/kafka" // source.type: kafka, for whole job files
)

const jobYAML = `name: orders
kafka:
  brokers: ["localhost:9092"]
source:
  topics: [orders]
sink:
  type: file
  path: /data/out
`

// The records of the bucket tests: record id has the time of hour
// id%3 (+3 from id 5000 on) of 2026-01-01 and the country of id/3%2, so
// that consecutive records go to six buckets in turn.
const testTemplate = "dt={yyyy-MM-dd}/hour={HH}/c={field:c}"

var (
	day       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	countries = []string{"DE", "FR"}
)

func bvalue(id int) []byte {
	return fmt.Appendf(nil, `{"id":%d,"c":"%s","pad":"%s"}`, id, countries[id/3%2], strings.Repeat("x", id%37))
}

func bucketOf(id int) string {
	return fmt.Sprintf("dt=2026-01-01/hour=%02d/c=%s", hour(id), countries[id/3%2])
}

func hour(id int) int { return id%3 + 3*(id/5000) }

func brec(id int) *record.Record {
	ts := day.Add(time.Duration(hour(id))*time.Hour + time.Duration(id%3000)*time.Second/3)
	return &record.Record{Topic: "orders", Offset: int64(id), Timestamp: ts, Value: bvalue(id)}
}

func writeBuckets(t *testing.T, w sink.Writer, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := w.Write(ctx, brec(i)); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
}

// bucketed configures files that span checkpoints in the buckets of
// testTemplate, for writers 0 and 1.
func bucketed(c *Config) {
	span(1 << 20)(c)
	c.PathTemplate = testTemplate
}

// tree lists every file under testDir, as paths relative to it: those a
// reader sees (no segment starting with '.' or '_') and the hidden ones
// (but the job's lock).
func tree(t *testing.T, fs vfs.FS) (visible, hidden []string) {
	t.Helper()
	var walk func(rel string)
	walk = func(rel string) {
		names, err := fs.List(fs.PathJoin(testDir, rel))
		if err != nil {
			t.Fatalf("list %s: %v", rel, err)
		}
		for _, n := range names {
			p := strings.TrimPrefix(rel+"/"+n, "/")
			st, err := fs.Stat(fs.PathJoin(testDir, p))
			if err != nil {
				t.Fatalf("stat %s: %v", p, err)
			}
			switch {
			case st.IsDir():
				walk(p)
			case strings.HasPrefix(n, ".lock."):
			case strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_"):
				hidden = append(hidden, p)
			default:
				visible = append(visible, p)
			}
		}
	}
	walk("")
	slices.Sort(visible)
	slices.Sort(hidden)
	return visible, hidden
}

// assertBucketedOnce checks that the visible files hold each of ids
// exactly once, each in the directory of its bucket, and nothing else.
func assertBucketedOnce(t *testing.T, fs vfs.FS, ids []int) {
	t.Helper()
	visible, _ := tree(t, fs)
	got := map[int]int{}
	for _, p := range visible {
		dir := p[:strings.LastIndexByte(p, '/')]
		f, err := fs.Open(fs.PathJoin(testDir, p))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var v struct{ ID int }
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: %q: %v", p, sc.Text(), err)
			}
			if string(bvalue(v.ID)) != sc.Text() || bucketOf(v.ID) != dir {
				t.Fatalf("%s holds %s, of bucket %s", p, sc.Text(), bucketOf(v.ID))
			}
			got[v.ID]++
		}
		_ = f.Close()
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("record %d is visible %d times", id, got[id])
		}
		delete(got, id)
	}
	for id, n := range got {
		t.Errorf("record %d is visible %d times, and not expected", id, n)
	}
}

// TestRecordsGoToTheBucketsOfTheirTimeAndFieldExactlyOnce: records of
// three hours and two countries, interleaved, over several checkpoints:
// every record is in its bucket's directory once, with one file per
// bucket and writer, and CommittedAfter finds them in their directories.
func TestRecordsGoToTheBucketsOfTheirTimeAndFieldExactlyOnce(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, bucketed)
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	for id := 1; id <= 4; id++ {
		writeBuckets(t, w0, (id-1)*200, id*200)
		writeBuckets(t, w1, 1000+(id-1)*200, 1000+id*200)
		if id == 4 {
			w0.(sink.InputEnder).EndInput()
			w1.(sink.InputEnder).EndInput()
		}
		cs := append(preCommit(t, w0, checkpoint.ID(id)), preCommit(t, w1, checkpoint.ID(id))...)
		commit(t, s, cs)
		if id < 4 {
			if visible, hidden := tree(t, fs); len(visible) != 0 || len(hidden) != 12 {
				t.Fatalf("after checkpoint %d: visible %v, hidden %v; want the 12 open files (6 buckets, 2 writers)", id, visible, hidden)
			}
		}
	}
	assertBucketedOnce(t, fs, append(ids(0, 800), ids(1000, 1800)...))
	visible, hidden := tree(t, fs)
	if len(visible) != 12 || len(hidden) != 0 {
		t.Fatalf("visible %v, hidden %v; want one file per bucket and writer", visible, hidden)
	}
	after, err := s.CommittedAfter(ctx, 3)
	if err != nil || !slices.Equal(after, visible) {
		t.Fatalf("CommittedAfter(3) = %v, %v; want %v", after, err, visible)
	}
	if after, err := s.CommittedAfter(ctx, 4); err != nil || len(after) != 0 {
		t.Fatalf("CommittedAfter(4) = %v, %v; want none", after, err)
	}
}

// TestCrashWithSeveralOpenBucketsResumesThemExactlyOnce: checkpoint 1
// records six open files per writer; afterwards the writers write on,
// writer 0 into six new buckets too, and it pre-commits 2 (never
// completed). The restart cuts every open file back, removes the new
// buckets' files, the writers resume all their files, and after the final
// pre-commit and commit nothing hidden is left.
func TestCrashWithSeveralOpenBucketsResumesThemExactlyOnce(t *testing.T) {
	crashCases(func(t *testing.T, cfg vfs.CrashCloneCfg) {
		mem := vfs.NewCrashableMem()
		s := newTestFile(t, mem, bucketed)
		w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
		writeBuckets(t, w0, 0, 300)
		writeBuckets(t, w1, 1000, 1300)
		restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
		writeBuckets(t, w0, 300, 600)
		writeBuckets(t, w0, 5000, 5100)
		preCommit(t, w0, 2) // checkpoint 2 never completes
		writeBuckets(t, w0, 600, 700)
		w0.(sink.InputEnder).EndInput()
		preCommit(t, w0, 3) // rolls them all; checkpoint 3 never completes either
		writeBuckets(t, w1, 1300, 1600)

		crashed := mem.CrashClone(cfg)
		if _, hidden := tree(t, crashed); !slices.ContainsFunc(hidden, func(p string) bool { return strings.HasPrefix(p, "dt=2026-01-01/hour=03/") }) {
			t.Fatalf("hidden %v: pre-commit 2 made files in new buckets durable", hidden)
		}
		s2 := newTestFile(t, crashed, bucketed)
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if visible, hidden := tree(t, crashed); len(visible) != 0 || len(hidden) != 12 {
			t.Fatalf("after Recover: visible %v, hidden %v; want the 12 open files only", visible, hidden)
		}
		r0, r1 := newTestWriter(t, s2, 0), newTestWriter(t, s2, 1)
		writeBuckets(t, r0, 300, 600)
		writeBuckets(t, r0, 5000, 5100)
		writeBuckets(t, r0, 600, 700)
		writeBuckets(t, r1, 1300, 1600)
		r0.(sink.InputEnder).EndInput()
		r1.(sink.InputEnder).EndInput()
		commit(t, s2, append(preCommit(t, r0, 2), preCommit(t, r1, 2)...))
		assertBucketedOnce(t, crashed, slices.Concat(ids(0, 700), ids(1000, 1600), ids(5000, 5100)))
		visible, hidden := tree(t, crashed)
		if len(visible) != 18 || len(hidden) != 0 {
			t.Fatalf("visible %v, hidden %v: want each resumed file committed, nothing hidden", visible, hidden)
		}
	})(t)
}

// TestRecoverCommitsEveryOpenFileOfAWriterTheJobNoLongerHas: scaled down
// to one writer, writer 1's six open files are committed at once, each
// under its own name in its bucket; a second Recover changes nothing.
func TestRecoverCommitsEveryOpenFileOfAWriterTheJobNoLongerHas(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, bucketed)
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	writeBuckets(t, w0, 0, 100)
	writeBuckets(t, w1, 100, 200)
	restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
	_, _ = w0.Close(), w1.Close()
	_ = s.Close()

	for range 2 {
		s2 := newTestFile(t, fs, func(c *Config) { bucketed(c); c.Writers = 1 })
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		visible, hidden := tree(t, fs)
		if len(visible) != 6 || len(hidden) != 6 {
			t.Fatalf("after Recover: visible %v, hidden %v; want writer 1's 6 files committed, writer 0's 6 kept", visible, hidden)
		}
		assertBucketedOnce(t, fs, ids(100, 200))
		_ = s2.Close()
	}
}

// TestMaxOpenFilesRollsTheLeastRecentlyWrittenFile: with two open files
// at most, a third bucket rolls the one written least recently; the
// others stay open.
func TestMaxOpenFilesRollsTheLeastRecentlyWrittenFile(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, func(c *Config) { span(1 << 20)(c); c.PathTemplate = "c={field:c}"; c.MaxOpenFiles = 2 })
	w := newTestWriter(t, s, 0)
	write := func(id int, country string) {
		t.Helper()
		v := fmt.Appendf(nil, `{"id":%d,"c":"%s"}`, id, country)
		if err := w.Write(ctx, &record.Record{Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	write(0, "DE")
	write(1, "FR")
	write(2, "DE") // FR is the least recently written now
	write(3, "IT") // rolls FR
	write(4, "DE")
	write(5, "FR") // rolls IT (DE was written after it)
	cs := preCommit(t, w, 1)
	commit(t, s, cs)
	visible, hidden := tree(t, fs)
	if !slices.Equal(visible, []string{"c=FR/part-orders-000000000001-w0-0.jsonl", "c=IT/part-orders-000000000001-w0-1.jsonl"}) || len(hidden) != 2 {
		t.Fatalf("visible %v, hidden %v; want FR's and IT's first files rolled, DE's and FR's second open", visible, hidden)
	}
	var fc fileCommittable
	if err := json.Unmarshal(cs[len(cs)-1].Data, &fc); err != nil || len(fc.OpenFiles) != 2 {
		t.Fatalf("committable %s: want two open files (%v)", cs[len(cs)-1].Data, err)
	}
}

// TestAQuietBucketRollsByAgeWhileTheOthersGoOn: roll_age applies to each
// open file: the hour nobody writes to any more becomes visible at the
// first pre-commit after its age, the current one stays open.
func TestAQuietBucketRollsByAgeWhileTheOthersGoOn(t *testing.T) {
	fs := vfs.NewMem()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s := newTestFile(t, fs, func(c *Config) {
		span(1 << 20)(c)
		c.PathTemplate, c.RollAge, c.Now = "h={HH}", time.Minute, clock.Now
	})
	w := newTestWriter(t, s, 0)
	at := func(id int, hour int) {
		t.Helper()
		if err := w.Write(ctx, &record.Record{Timestamp: day.Add(time.Duration(hour) * time.Hour), Value: value(id)}); err != nil {
			t.Fatal(err)
		}
	}
	at(0, 1)
	commit(t, s, preCommit(t, w, 1))
	clock.Advance(40 * time.Second)
	at(1, 2)
	clock.Advance(20 * time.Second)
	at(2, 2)
	commit(t, s, preCommit(t, w, 2))
	visible, hidden := tree(t, fs)
	if !slices.Equal(visible, []string{"h=01/part-orders-000000000002-w0-0.jsonl"}) || len(hidden) != 1 || !strings.HasPrefix(hidden[0], "h=02/") {
		t.Fatalf("visible %v, hidden %v; want hour 1 rolled by age, hour 2 open", visible, hidden)
	}
}

// TestCheckpointsWithTheFormerSingleOpenFileAreResumed: a checkpoint
// written before path_template recorded its open file as "open"; Recover
// still cuts it back and hands it to its writer.
func TestCheckpointsWithTheFormerSingleOpenFileAreResumed(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, span(1<<20))
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 50)
	cs := preCommit(t, w, 1)
	writeRange(t, w, 50, 60) // after the barrier: cut back
	_ = w.Close()
	var fc fileCommittable
	if err := json.Unmarshal(cs[0].Data, &fc); err != nil || len(fc.OpenFiles) != 1 {
		t.Fatalf("committable %s (%v)", cs[0].Data, err)
	}
	former, _ := json.Marshal(map[string]any{"open": fc.OpenFiles[0]})
	cs[0].Data = former
	if err := s.Recover(ctx, cs); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	r := newTestWriter(t, s, 0)
	writeRange(t, r, 50, 60)
	r.(sink.InputEnder).EndInput()
	commit(t, s, preCommit(t, r, 2))
	assertParts(t, fs, 60, "part-orders-000000000002-w0-0.jsonl")
}

// TestBucketedCommittablesMustStayUnderThePath: a committable's paths may
// name a bucket directory, never anything outside sink.path, a hidden
// directory, or a rename across directories.
func TestBucketedCommittablesMustStayUnderThePath(t *testing.T) {
	s := newTestFile(t, vfs.NewMem(), bucketed)
	const (
		from = ".inprogress.part-orders-w0-000000000001-0.jsonl"
		to   = "part-orders-000000000001-w0-0.jsonl"
	)
	rolled := func(f, t string) string { return fmt.Sprintf(`{"rolled":[{"from":%q,"to":%q}]}`, f, t) }
	for _, data := range []string{
		rolled("../"+from, to), rolled("a/../"+from, "a/../"+to), rolled("/abs/"+from, "/abs/"+to),
		rolled(".x/"+from, ".x/"+to), rolled("_x/"+from, "_x/"+to), rolled("a//"+from, "a//"+to),
		rolled("a/"+from, "b/"+to), rolled("a/"+from, to),
		`{"open_files":[{"name":"../` + from + `","size":1}]}`,
		`{"open_files":[{"name":"a b/` + from + `","size":1}]}`,
	} {
		err := s.Commit(ctx, []sink.Committable{{Checkpoint: 1, Data: json.RawMessage(data)}})
		if !errors.Is(err, sink.ErrBadCommittable) {
			t.Errorf("Commit(%s) = %v, want ErrBadCommittable", data, err)
		}
	}
}

func TestPathTemplateMistakesNameTheirKey(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.PathTemplate = "dt={yyyy-MM-dd" }, "sink.path_template"},
		{func(c *Config) { c.PathTemplate = "{date}" }, "sink.path_template"},
		{func(c *Config) { c.PathTemplate = "../{HH}" }, "sink.path_template"},
		{func(c *Config) { c.PathTemplate = "_tmp/{HH}" }, "sink.path_template"},
		{func(c *Config) { c.MaxOpenFiles = -1 }, "sink.max_open_files"},
		{func(c *Config) { c.MaxOpenFiles = 100000 }, "sink.max_open_files"},
	} {
		cfg := Config{Path: testDir, Job: "orders"}
		tc.mod(&cfg)
		_, err := New(cfg, vfs.NewMem(), zerolog.Nop())
		if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want+":") {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig naming %s", cfg, err, tc.want)
		}
	}
	j, err := config.Parse("job.yaml", []byte(jobYAML+"  path_template: \"dt={yyyy-MM-dd}/hour={HH\"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "sink.path_template") {
		t.Errorf("Parse: %v, %+v; want an error naming sink.path_template", err, j)
	}
	j, err = config.Parse("job.yaml", []byte(jobYAML+"  path_template: \"dt={yyyy-MM-dd}/hour={HH}\"\n"), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c := j.Sink.Config.(*Config); c.PathTemplate != "dt={yyyy-MM-dd}/hour={HH}" || c.MaxOpenFiles != 32 {
		t.Errorf("config %+v: want the template and max_open_files 32", c)
	}
}
