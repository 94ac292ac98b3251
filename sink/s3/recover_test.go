package s3

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
)

// A crash after checkpoint 2 completed (its commit may or may not have
// run), with more written, parts uploaded, an object rolled and checkpoint
// 3 pre-committed but never completed: a new sink recovers from 2's
// committables, its writer resumes the object open at 2, writes the
// replayed records, and the output is every record exactly once, with no
// upload or delta left behind.
func TestCrashAfterPreCommitThenResumeIsExactlyOnce(t *testing.T) {
	for _, committed := range []bool{false, true} {
		name := "commit-not-run"
		if committed {
			name = "commit-ran"
		}
		t.Run(name, func(t *testing.T) {
			f := newFakeS3(testBucket, testPart)
			small := func(c *Config) { c.RollSize = 12 * testPart }
			s := newTestSink(t, f, small)
			w := newTestWriter(t, s, 0)
			writeRange(t, w, 0, 100)
			checkpointed(t, s, w, 1)
			writeRange(t, w, 100, 150)
			restored := preCommit(t, w, 2)
			if committed {
				commit(t, s, restored)
			}
			o := decodeAll(t, restored)[len(restored)-1].Open
			if o == nil || len(o.Parts) == 0 || len(o.Tail) == 0 {
				t.Fatalf("checkpoint 2 should record an open object with parts and a tail: %+v", o)
			}
			// After the barrier: the object rolls, the next one gets parts,
			// checkpoint 3 is pre-committed and never completes.
			writeRange(t, w, 150, 400)
			preCommit(t, w, 3)
			writeRange(t, w, 400, 450)
			_ = w.Close() // the crash: nothing else runs

			s2 := newTestSink(t, f, small)
			if err := s2.Recover(ctx, restored); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if u := f.openUploads(); !slices.Equal(u, []string{o.Key}) {
				t.Fatalf("uploads after Recover: %v, want only the resumed %s", u, o.Key)
			}
			for _, k := range f.keys(tailsDir) {
				if !slices.ContainsFunc(o.Tail, func(d deltaRec) bool { return d.Key == k }) {
					t.Fatalf("delta %s left after Recover; the resumed tail is %+v", k, o.Tail)
				}
			}
			if len(f.keys(jobDir)) != 0 {
				t.Fatalf("visible after Recover: %v", f.keys(jobDir))
			}
			w2 := newTestWriter(t, s2, 0)
			writeRange(t, w2, 150, 450) // the source replays from checkpoint 2
			w2.EndInput()
			checkpointed(t, s2, w2, 3)
			assertExactlyOnce(t, f, ids(0, 450))
			assertClean(t, f)
			if !slices.Contains(f.keys(jobDir), o.Key) {
				t.Fatalf("the resumed object %s is not among %v", o.Key, f.keys(jobDir))
			}
		})
	}
}

// Parts the crashed run uploaded after the checkpoint are not part of
// the resumed object: the restarted run (here with another part_size, so
// its parts differ) overwrites or leaves them, and completion names its
// own parts by ETag.
func TestResumeIgnoresPartsUploadedAfterTheCheckpoint(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.RollSize = 64 * testPart })
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	restored := preCommit(t, w, 1)
	writeRange(t, w, 100, 600) // many parts after the barrier, no roll
	_ = w.Close()

	s2 := newTestSink(t, f, func(c *Config) { c.RollSize = 64 * testPart; c.PartSize = 3 * testPart })
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	w2 := newTestWriter(t, s2, 0)
	writeRange(t, w2, 100, 600)
	w2.EndInput()
	checkpointed(t, s2, w2, 2)
	assertExactlyOnce(t, f, ids(0, 600))
	assertClean(t, f)
}

// Recover commits the restored checkpoint's rolled objects (a crash
// between its completion and its commit) and then names new objects
// after it, so that nothing collides with what is visible.
func TestRecoverCommitsRestoredObjectsAndNamesGoOnAfterThem(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	roll := func(c *Config) { c.RollOnCheckpoint = true }
	s := newTestSink(t, f, roll)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 10)
	checkpointed(t, s, w, 1)
	preCommit(t, w, 2) // nothing written: the empty committable names the barrier
	preCommit(t, w, 3)
	writeRange(t, w, 10, 20)
	restored := preCommit(t, w, 4) // completes; the crash comes before its commit
	_ = w.Close()

	s2 := newTestSink(t, f, roll)
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	assertExactlyOnce(t, f, ids(0, 20))
	if got := s2.Stats().FilesCommitted; got != 1 {
		t.Fatalf("Recover completed %d objects, want 1", got)
	}
	w2 := newTestWriter(t, s2, 0)
	writeRange(t, w2, 20, 30)
	checkpointed(t, s2, w2, 5)
	want := []string{
		jobDir + "part-orders-000000000001-w0-0.jsonl",
		jobDir + "part-orders-000000000004-w0-0.jsonl",
		jobDir + "part-orders-000000000005-w0-0.jsonl",
	}
	if got := f.keys(jobDir); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	// A restart from an empty checkpoint dir (no committables) still names
	// new objects after every visible one.
	s3 := newTestSink(t, f, roll)
	if err := s3.Recover(ctx, nil); err != nil {
		t.Fatalf("Recover(nil): %v", err)
	}
	w3 := newTestWriter(t, s3, 0)
	writeRange(t, w3, 30, 40)
	checkpointed(t, s3, w3, 1)
	if got := f.keys(jobDir); len(got) != 4 || got[3] != jobDir+"part-orders-000000000006-w0-0.jsonl" {
		t.Fatalf("objects %v, want a fourth named after checkpoint 5", got)
	}
}

// A job scaled down: Recover completes the open object of a writer the
// job no longer has, its tail uploaded as the last part, and resumes the
// others. Recovering again changes nothing.
func TestRecoverCompletesOpenObjectsOfRemovedWriters(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	two := func(c *Config) { c.Parallelism = 2 }
	s := newTestSink(t, f, two)
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	writeRange(t, w0, 0, 100)
	writeRange(t, w1, 1000, 1100)
	restored := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
	for _, d := range decodeAll(t, restored) {
		if d.Open == nil || len(d.Open.Parts) == 0 || len(d.Open.Tail) == 0 {
			t.Fatalf("each writer should have an open object with parts and a tail: %+v", d.Open)
		}
	}
	_, _ = w0.Close(), w1.Close()

	one := func(c *Config) { c.Parallelism = 1 }
	for range 2 {
		s2 := newTestSink(t, f, one)
		if err := s2.Recover(ctx, restored); err != nil {
			t.Fatalf("Recover: %v", err)
		}
		assertExactlyOnce(t, f, ids(1000, 1100))
		if got := f.keys(jobDir); !slices.Equal(got, []string{jobDir + "part-orders-000000000001-w1-0.jsonl"}) {
			t.Fatalf("visible %v", got)
		}
		if u := f.openUploads(); len(u) != 1 || !strings.Contains(u[0], "-w0-") {
			t.Fatalf("uploads %v, want writer 0's only", u)
		}
		if d := f.keys(tailsDir + "part-orders-000000000001-w1-0.jsonl/"); len(d) != 0 {
			t.Fatalf("deltas of the completed object left: %v", d)
		}
	}
	s3 := newTestSink(t, f, one)
	if err := s3.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	w := newTestWriter(t, s3, 0)
	writeRange(t, w, 100, 150)
	w.EndInput()
	checkpointed(t, s3, w, 2)
	assertExactlyOnce(t, f, append(ids(0, 150), ids(1000, 1100)...))
	assertClean(t, f)
}

// Recover never aborts an upload a restored committable references, even
// one only an older (carried) committable names.
func TestRecoverKeepsEveryReferencedUpload(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	restored := preCommit(t, w, 1)
	_ = w.Close()
	// Another start of the same checkpoint, whose writer never opened.
	s2 := newTestSink(t, f, nil)
	if err := s2.Recover(ctx, restored); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	s3 := newTestSink(t, f, nil)
	if err := s3.Recover(ctx, restored); err != nil {
		t.Fatalf("second Recover: %v", err)
	}
	if u := f.openUploads(); len(u) != 1 {
		t.Fatalf("uploads %v, want the one checkpoint 1 references", u)
	}
	w3 := newTestWriter(t, s3, 0)
	writeRange(t, w3, 100, 120)
	w3.EndInput()
	checkpointed(t, s3, w3, 2)
	assertExactlyOnce(t, f, ids(0, 120))
	assertClean(t, f)
}

// An upload a restored checkpoint needs is gone (a lifecycle rule aborted
// it): the records are lost, and Recover says so.
func TestRecoverReportsALostUpload(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	restored := preCommit(t, w, 1)
	_ = w.Close()
	o := decodeAll(t, restored)[0].Open
	if err := f.AbortMultipartUpload(ctx, testBucket, o.Key, o.Upload); err != nil {
		t.Fatal(err)
	}
	s2 := newTestSink(t, f, nil)
	if err := s2.Recover(ctx, restored); !errors.Is(err, sink.ErrCommitLost) {
		t.Fatalf("Recover: %v, want ErrCommitLost", err)
	}
}

// Restoring a checkpoint older than the newest (the newest damaged): an
// object open at it was completed later. Recover refuses (its records
// after the checkpoint would be written twice) unless on_unrestorable is
// fall_back.
func TestRecoverRefusesAnOpenObjectCompletedLater(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, nil)
	w := newTestWriter(t, s, 0)
	writeRange(t, w, 0, 100)
	old := preCommit(t, w, 1)
	commit(t, s, old)
	w.Committed(1)
	writeRange(t, w, 100, 200)
	w.EndInput()
	checkpointed(t, s, w, 2)
	_ = w.Close()

	if after, err := s.CommittedAfter(ctx, 1); err != nil || len(after) != 0 {
		t.Fatalf("CommittedAfter(1) = %v, %v: the object spans 1, its name says F = 1", after, err)
	}
	s2 := newTestSink(t, f, nil)
	if err := s2.Recover(ctx, old); !errors.Is(err, sink.ErrCommitConflict) {
		t.Fatalf("Recover(checkpoint 1): %v, want ErrCommitConflict", err)
	}
	s3 := newTestSink(t, f, func(c *Config) { c.FallBack = true })
	if err := s3.Recover(ctx, old); err != nil {
		t.Fatalf("Recover with fall_back: %v", err)
	}
	w3 := newTestWriter(t, s3, 0)
	writeRange(t, w3, 100, 110)
	w3.EndInput()
	checkpointed(t, s3, w3, 2)
	if got := f.keys(jobDir); len(got) != 2 || got[1] != jobDir+"part-orders-000000000002-w0-0.jsonl" {
		t.Fatalf("objects %v, want a new one after the visible", got)
	}
}

func TestCommittedAfterListsObjectsOfLaterCheckpoints(t *testing.T) {
	f := newFakeS3(testBucket, testPart)
	s := newTestSink(t, f, func(c *Config) { c.RollOnCheckpoint = true })
	w := newTestWriter(t, s, 0)
	for id := checkpoint.ID(1); id <= 3; id++ {
		writeRange(t, w, int(id)*10, int(id)*10+10)
		checkpointed(t, s, w, id)
	}
	for id, want := range map[checkpoint.ID]int{0: 3, 1: 2, 3: 0} {
		got, err := s.CommittedAfter(ctx, id)
		if err != nil || len(got) != want {
			t.Errorf("CommittedAfter(%d) = %v, %v; want %d objects", id, got, err, want)
		}
	}
}
