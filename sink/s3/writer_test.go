package s3

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
)

// An object grows over many checkpoints (parts and deltas, nothing
// visible) and becomes visible, whole, when it rolls by size and the next
// checkpoint completes.
func TestObjectSpansManyPreCommitsAndRollsBySizeIntoOneObject(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.RollSize = 16 * testPart })
	w := newTestWriter(t, s, 0)
	id, next := checkpoint.ID(0), 0
	for len(f.keys(jobDir)) == 0 {
		if id > 200 {
			t.Fatal("no object visible after 200 checkpoints")
		}
		writeRange(t, w, next, next+7)
		next += 7
		id++
		cs := checkpointed(t, s, w, id)
		if d := decodeAll(t, cs); len(d) != 1 || (d[0].Open == nil && len(d[0].Complete) == 0) {
			t.Fatalf("checkpoint %d: committables %+v, want one with the open or rolled object", id, d)
		}
	}
	if id < 20 {
		t.Fatalf("the object became visible at checkpoint %d: it should span more", id)
	}
	keys := f.keys(jobDir)
	if want := []string{jobDir + "part-orders-000000000001-w0-0.jsonl"}; !slices.Equal(keys, want) {
		t.Fatalf("visible %v, want %v", keys, want)
	}
	if n := f.count("PutObjectPart"); n < 16 {
		t.Errorf("%d parts uploaded, want at least 16 (16 KiB in 1 KiB parts)", n)
	}
	// Every record written before the roll is in the object, once; the
	// rest is in the next object, still open.
	data, _ := f.object(keys[0])
	rolledAt := strings.Count(string(data), "\n")
	assertExactlyOnce(t, f, ids(0, rolledAt))
	if len(data) < 16*testPart {
		t.Errorf("object of %d bytes, roll_size is %d", len(data), 16*testPart)
	}
	if d := f.keys(tailsDir + "part-orders-000000000001-w0-0.jsonl/"); len(d) != 0 {
		t.Errorf("deltas of the committed object left: %v", d)
	}
	// The stop: EndInput, the final checkpoint makes everything visible.
	w.EndInput()
	checkpointed(t, s, w, id+1)
	assertExactlyOnce(t, f, ids(0, next))
	assertClean(t, f)
	if st := s.Stats(); st.FilesCommitted != 2 || st.BytesWritten != uint64(totalBytes(f)) {
		t.Errorf("stats %+v, want 2 objects and %d bytes", st, totalBytes(f))
	}
}

func totalBytes(f *fakeS3) int {
	n := 0
	for _, k := range f.keys(jobDir) {
		d, _ := f.object(k)
		n += len(d)
	}
	return n
}

// The committable of a pre-commit records the open object exactly: parts
// 1..k, and deltas that hold the bytes after them up to its size.
func TestPreCommitRecordsPartsAndTailDeltas(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10) // less than a part
	d1 := decodeAll(t, preCommit(t, w, 1))
	o := d1[0].Open
	if o == nil || len(o.Parts) != 0 || len(o.Tail) != 1 || o.Tail[0].Off != 0 || o.Tail[0].Len != o.Size {
		t.Fatalf("after 10 records: %+v, want no part and one delta of the whole object", o)
	}
	writeRange(t, w, 10, 60) // past a part
	d2 := decodeAll(t, preCommit(t, w, 2))
	o2 := d2[len(d2)-1].Open
	if len(d2) != 1 {
		t.Fatalf("the open state of checkpoint 1 is carried: %d committables", len(d2))
	}
	end := partsSize(o2.Parts)
	if len(o2.Parts) == 0 || end >= o2.Size || len(o2.Tail) == 0 || o2.Tail[0].Off > end || o2.Tail[len(o2.Tail)-1].Off+o2.Tail[len(o2.Tail)-1].Len != o2.Size {
		t.Fatalf("after 60 records: %+v", o2)
	}
	// The tail is durable: the deltas hold exactly the bytes after the
	// parts (read back as Recover does).
	tail, err := s.readTail(ctx, o2)
	if err != nil {
		t.Fatalf("readTail: %v", err)
	}
	var want []byte
	for i := range 60 {
		want = append(append(want, value(i)...), '\n')
	}
	if string(tail) != string(want[end:]) {
		t.Fatalf("tail %q, want %q", tail, want[end:])
	}
}

// A slow writer with frequent checkpoints keeps its tail in at most
// maxTailDeltas deltas.
func TestTailDeltasAreConsolidated(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.PartSize = 64 * testPart; c.RollSize = 1024 * testPart })
	w := newTestWriter(t, s, 0)
	var o *openRec
	for id := checkpoint.ID(1); id <= 3*maxTailDeltas; id++ {
		writeRange(t, w, int(id), int(id)+1)
		o = decodeAll(t, checkpointed(t, s, w, id))[0].Open
		if len(o.Tail) > maxTailDeltas {
			t.Fatalf("checkpoint %d: %d deltas", id, len(o.Tail))
		}
	}
	tail, err := s.readTail(ctx, o)
	if err != nil || int64(len(tail)) != o.Size {
		t.Fatalf("tail of %d bytes (%v), want %d", len(tail), err, o.Size)
	}
}

// roll_on_checkpoint: every checkpoint makes what was written before it
// visible, one object per checkpoint, nothing left open.
func TestRollOnCheckpointMakesEachCheckpointVisible(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.RollOnCheckpoint = true })
	w := newTestWriter(t, s, 0)
	for id := checkpoint.ID(1); id <= 5; id++ {
		writeRange(t, w, int(id-1)*50, int(id)*50)
		d := decodeAll(t, checkpointed(t, s, w, id))
		if len(d) != 1 || d[0].Open != nil || len(d[0].Complete) != 1 {
			t.Fatalf("checkpoint %d: %+v, want one rolled object and none open", id, d)
		}
		assertExactlyOnce(t, f, ids(0, int(id)*50))
		assertClean(t, f)
		if n := len(f.keys(jobDir)); n != int(id) {
			t.Fatalf("after checkpoint %d: %d objects", id, n)
		}
	}
	// Names sort by time: F is the checkpoint the object's records start at.
	if k := f.keys(jobDir); k[0] != jobDir+"part-orders-000000000001-w0-0.jsonl" || k[4] != jobDir+"part-orders-000000000005-w0-0.jsonl" {
		t.Fatalf("keys %v", k)
	}
}

// EndInput rolls at the next pre-commit; that checkpoint's commit leaves
// every record visible and no upload or delta behind.
func TestEndInputRollsAtTheNextPreCommit(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	checkpointed(t, s, w, 1)
	writeRange(t, w, 100, 130)
	w.EndInput()
	d := decodeAll(t, checkpointed(t, s, w, 2))
	if len(d) != 1 || d[0].Open != nil || len(d[0].Complete) != 1 {
		t.Fatalf("final pre-commit: %+v, want the object rolled", d)
	}
	assertExactlyOnce(t, f, ids(0, 130))
	assertClean(t, f)
}

// roll_age rolls at a pre-commit too, so an idle writer's object becomes
// visible.
func TestRollAgeRollsAtPreCommit(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	clk := newClock()
	s := newTestSink(t, f, func(c *Config) { c.RollAge = time.Minute; c.Now = clk.Now })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	checkpointed(t, s, w, 1)
	if len(f.keys(jobDir)) != 0 {
		t.Fatal("visible before roll_age")
	}
	clk.advance(time.Minute)
	checkpointed(t, s, w, 2)
	assertExactlyOnce(t, f, ids(0, 10))
	assertClean(t, f)
}

// A pre-commit that cannot upload declines the checkpoint; nothing is
// lost: the next one carries the rolled object and the tail.
func TestFailedPreCommitDeclinesAndTheNextCarriesEverything(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.RollSize = 4 * testPart })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100) // rolls at least once; the last part of a roll fails below
	down := errors.New("injected: S3 down")
	f.setFail(func(op, _ string) error {
		if op == "PutObject" || op == "PutObjectPart" {
			return down
		}
		return nil
	})
	writeRange(t, w, 100, 200)
	if _, err := w.PreCommit(ctx, 1); !errors.Is(err, sink.ErrNotDurable) || !errors.Is(err, down) {
		t.Fatalf("PreCommit(1) with S3 down: %v, want ErrNotDurable", err)
	}
	f.setFail(nil)
	writeRange(t, w, 200, 250)
	w.EndInput()
	checkpointed(t, s, w, 2)
	assertExactlyOnce(t, f, ids(0, 250))
	assertClean(t, f)
}

// A checkpoint that fails after the writer pre-committed (declined by
// another task) is carried: the next commit completes its objects too.
func TestCommittablesOfFailedCheckpointsAreCarried(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.RollOnCheckpoint = true })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	preCommit(t, w, 1) // checkpoint 1 fails
	writeRange(t, w, 10, 20)
	cs := checkpointed(t, s, w, 2)
	if len(cs) != 2 || cs[0].Checkpoint != 1 || cs[1].Checkpoint != 2 {
		t.Fatalf("committables %+v, want those of 1 and 2", cs)
	}
	assertExactlyOnce(t, f, ids(0, 20))
	if cs := preCommit(t, w, 3); len(cs) != 1 || string(cs[0].Data) != "{}" {
		t.Fatalf("after Committed(2), nothing written: %+v, want one empty committable", cs)
	}
}

// With an asynchronous pre-commit, Writes go on while the barrier's
// uploads run: the committable holds what was written before the barrier,
// the next one the rest.
func TestAsyncPreCommitLetsWritesGoOn(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	finish, err := w.PreCommitAsync(ctx, 1)
	if err != nil {
		t.Fatalf("PreCommitAsync: %v", err)
	}
	writeRange(t, w, 100, 200) // concurrently with the uploader's barrier
	cs, err := finish()
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	var size int64
	for i := range 100 {
		size += int64(len(value(i)) + 1)
	}
	if o := decodeAll(t, cs)[0].Open; o.Size != size {
		t.Fatalf("checkpoint 1 records %d bytes, want the %d written before it", o.Size, size)
	}
	commit(t, s, cs)
	w.Committed(1)
	w.EndInput()
	checkpointed(t, s, w, 2)
	assertExactlyOnce(t, f, ids(0, 200))
	assertClean(t, f)
}

func TestJSONLRefusesEmptyValuesAndCompactsMultiLine(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	r := rec(1)
	r.Value = nil
	if err := w.Write(ctx, r); !errors.Is(err, sink.ErrBadRecord) {
		t.Fatalf("empty value: %v, want ErrBadRecord", err)
	}
	r.Value = []byte("{\n  \"a\": 1\n}")
	if err := w.Write(ctx, r); err != nil {
		t.Fatalf("multi-line value: %v", err)
	}
	w.EndInput()
	checkpointed(t, s, w, 1)
	data, _ := f.object(jobDir + "part-orders-000000000001-w0-0.jsonl")
	if string(data) != "{\"a\":1}\n" {
		t.Fatalf("object %q", data)
	}
}

func TestClosedWriterRefusesWrites(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, rec(1)); !errors.Is(err, sink.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if _, err := w.PreCommit(ctx, 1); !errors.Is(err, sink.ErrClosed) {
		t.Fatalf("PreCommit after Close: %v", err)
	}
}

// Stats counts every byte a writer appended when it was appended, before
// any pre-commit, and keeps the count of a writer closed without one (an
// attempt that ends in failure: the output is discarded, and was counted).
func TestStatsCountWhatTheWritersAppendedBeforeAnyPreCommit(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.Parallelism = 2 })
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	want := uint64(0)
	for i := range 50 {
		w := w0
		if i%3 == 0 {
			w = w1
		}
		writeRange(t, w, i, i+1)
		want += uint64(len(value(i)) + 1) // and its newline
		if got := s.Stats().BytesWritten; got != want {
			t.Fatalf("after record %d: %d bytes written, want %d", i, got, want)
		}
	}
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().BytesWritten; got != want {
		t.Fatalf("after writer 1 closed: %d bytes written, want %d", got, want)
	}
}
