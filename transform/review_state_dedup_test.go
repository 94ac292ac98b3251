package transform

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/keygroup"
	"github.com/connector-dev/connector/state"
)

// Review tests (keyed state over time and across changes): dedups on the
// state package's Stores, checkpointed, restored and rescaled as the
// runtime does (pipeline/worker.go: Flush, then Checkpoint and Wait;
// pipeline/restore.go: each worker restores from every old worker's chain
// with the range it owned). Each says whether it passed when written.

// stateJob is a job of one dedup over p workers, each a state.Store of its
// key groups, records routed by the key group of their id.
type stateJob struct {
	t      *testing.T
	root   string
	max    int
	gen    int
	id     int // checkpoints taken
	fullAt int64
	stores []*state.Store
	dedups []*Dedup
	chains []state.Chain // the last checkpoint's, by worker
}

func newStateJob(t *testing.T, max int) *stateJob {
	return &stateJob{t: t, root: t.TempDir(), max: max, fullAt: 4 << 10}
}

// start opens p workers restored from the last checkpoint (if any), each
// with a Dedup of cfg, the state of other dedups dropped.
func (j *stateJob) start(p int, cfg DedupConfig) {
	j.t.Helper()
	j.gen++
	var srcs []state.Restore
	for i, c := range j.chains {
		srcs = append(srcs, state.Restore{Chain: c, KeyGroups: keygroup.RangeOf(j.max, len(j.chains), i)})
	}
	j.stores, j.dedups = make([]*state.Store, p), make([]*Dedup, p)
	for w := range p {
		s, err := state.Open(state.Config{Dir: filepath.Join(j.root, "work", fmt.Sprintf("g%d-w%d", j.gen, w)), MaxParallelism: j.max,
			KeyGroups: keygroup.RangeOf(j.max, p, w), Restore: srcs, FullSnapshotAfter: j.fullAt}, zerolog.Nop())
		if err != nil {
			j.t.Fatalf("open worker %d of %d: %v", w, p, err)
		}
		j.t.Cleanup(func() { _ = s.Close() })
		// As pipeline/restore.go: the state of dedups the job no longer
		// has goes.
		if _, err := DropDedupState(s, map[string]string{cfg.Name: cfg.Key}); err != nil {
			j.t.Fatal(err)
		}
		d, err := NewDedup(cfg, s)
		if err != nil {
			j.t.Fatal(err)
		}
		j.stores[w], j.dedups[w] = s, d
	}
}

// apply runs the record {"id": id} at time at on the worker of its key
// group, and says whether it was kept.
func (j *stateJob) apply(id string, at time.Time) bool {
	j.t.Helper()
	kg := keygroup.Of([]byte(id), j.max)
	w := keygroup.OperatorOf(kg, j.max, len(j.stores))
	if err := j.stores[w].SetKeyGroup(kg); err != nil {
		j.t.Fatal(err)
	}
	return mustApply(j.t, j.dedups[w], recAt(fmt.Sprintf(`{"id":%q}`, id), at))
}

// checkpoint takes the next checkpoint on every worker, as the runtime
// does, and waits for background full snapshots so that the chains are
// the same at every run.
func (j *stateJob) checkpoint() {
	j.t.Helper()
	j.id++
	j.chains = make([]state.Chain, len(j.stores))
	for w, s := range j.stores {
		if err := j.dedups[w].Flush(); err != nil {
			j.t.Fatal(err)
		}
		dir := filepath.Join(j.root, fmt.Sprintf("chk-%d", j.id))
		p, err := s.Checkpoint(filepath.Join(dir, fmt.Sprintf("worker-%d", w)), filepath.Join(dir, fmt.Sprintf("worker-%d.changelog", w)))
		if err != nil {
			j.t.Fatal(err)
		}
		if j.chains[w], err = p.Wait(); err != nil {
			j.t.Fatal(err)
		}
	}
}

// crash drops the workers: what they did since the last checkpoint is lost.
func (j *stateJob) crash() {
	j.t.Helper()
	for _, s := range j.stores {
		if err := s.Close(); err != nil {
			j.t.Fatal(err)
		}
	}
	j.stores, j.dedups = nil, nil
}

// count applies ids (formatted with f) 0..n-1 at time at and returns how
// many were kept.
func (j *stateJob) count(f string, n int, at func(i int) time.Time) (kept int) {
	j.t.Helper()
	for i := range n {
		if j.apply(fmt.Sprintf(f, i), at(i)) {
			kept++
		}
	}
	return kept
}

func every(d time.Duration) func(int) time.Time {
	return func(i int) time.Time { return t0.Add(time.Duration(i) * d) }
}

func at(tm time.Time) func(int) time.Time { return func(int) time.Time { return tm } }

// Written by a review, passing: a dedup restored at parallelism 2 -> 3 -> 1
// -> 2 -> 4 on Pebble Stores (changelogs, background full snapshots,
// rescaled restores) drops every repeat within the TTL of a value seen
// before the restored checkpoint, and keeps again, once each, the values
// first seen after it (their first sightings were lost with the crash: a
// memory of them would drop the replayed records).
func TestReviewStateDedupRemembersExactlyTheCheckpointAcrossRescales(t *testing.T) {
	j := newStateJob(t, 128)
	cfg := DedupConfig{Name: "d", Key: "id", TTL: 10 * time.Minute}
	j.start(2, cfg)
	if kept := j.count("seen-%d", 300, every(time.Second)); kept != 300 {
		t.Fatalf("%d of 300 first sightings kept", kept)
	}
	j.checkpoint()
	now := t0.Add(5 * time.Minute)
	for round, p := range []int{3, 1, 2, 4} {
		lost := fmt.Sprintf("lost-%d-%%d", round)
		if kept := j.count(lost, 50, at(now)); kept != 50 {
			t.Fatalf("round %d: %d of 50 first sightings kept", round, kept)
		}
		j.crash()
		j.start(p, cfg)
		now = now.Add(10 * time.Second)
		if kept := j.count("seen-%d", 300, at(now)); kept != 0 {
			t.Fatalf("restored at parallelism %d: %d of 300 repeats within the TTL kept", p, kept)
		}
		if kept := j.count(lost, 50, at(now)); kept != 50 {
			t.Fatalf("restored at parallelism %d: %d of 50 records first seen after the checkpoint kept at their replay, want all (they were never output)", p, kept)
		}
		j.checkpoint()
	}
}

// Written by a review, passing: the ttl changed between restarts, 10m ->
// 30s -> 10m, with a rescale at each: a repeat of a value seen within the
// shortest ttl since is dropped at every step, a value seen 40 minutes
// before is kept (whatever ttl once remembered it).
func TestReviewStateDedupTTLChangesAcrossRestartsAndRescales(t *testing.T) {
	j := newStateJob(t, 128)
	j.start(2, DedupConfig{Name: "d", Key: "id", TTL: 10 * time.Minute})
	j.count("old-%d", 50, at(t0))
	now := t0.Add(40 * time.Minute)
	j.count("a-%d", 100, at(now))
	j.checkpoint()
	j.crash()
	j.start(3, DedupConfig{Name: "d", Key: "id", TTL: 30 * time.Second})
	now = now.Add(20 * time.Second)
	if kept := j.count("a-%d", 100, at(now)); kept != 0 {
		t.Fatalf("ttl 10m -> 30s: %d of 100 repeats 20 s after their first sighting kept", kept)
	}
	j.count("b-%d", 100, at(now))
	j.checkpoint()
	j.crash()
	j.start(1, DedupConfig{Name: "d", Key: "id", TTL: 10 * time.Minute})
	now = now.Add(20 * time.Second)
	if kept := j.count("b-%d", 100, at(now)); kept != 0 {
		t.Fatalf("ttl 30s -> 10m: %d of 100 repeats 20 s after their first sighting kept", kept)
	}
	if kept := j.count("old-%d", 50, at(now)); kept != 50 {
		t.Fatalf("%d of 50 values last seen 40 minutes before (4 TTLs) kept, want all", kept)
	}
}

// Found by a review (failed before the fix): a partition lagging behind the others in a worker (a
// backlog read unevenly after an outage) is deduplicated among its own
// records while the job runs (its buckets, below the expired ones, stay
// while records come to them: TestDedupStateStaysBoundedBehindARecordFarAhead),
// but a restore forgets it: the restored dedup's first record expires
// every bucket below the newest's second before (load sets expiredTo to
// MinInt64, advance calls expireBelow), the lagging stream's too. So a
// crash, restart or rescale makes the dedup keep repeats that the same
// records without the crash had dropped: duplicates in the sink because
// of a restore.
func TestReviewStateDedupALaggingPartitionsMemorySurvivesARestore(t *testing.T) {
	j := newStateJob(t, 128)
	cfg := DedupConfig{Name: "d", Key: "id", TTL: 10 * time.Minute}
	j.start(2, cfg)
	ahead, behind := t0.Add(time.Hour), t0 // two partitions, an hour apart
	j.count("ahead-%d", 100, at(ahead))
	j.count("behind-%d", 100, at(behind))
	if kept := j.count("behind-%d", 100, at(behind.Add(time.Minute))); kept != 0 {
		t.Fatalf("while running: %d of 100 repeats of the lagging partition kept (expected dropped, as documented)", kept)
	}
	j.checkpoint()
	j.crash()
	j.start(2, cfg)
	j.count("ahead-x-%d", 10, at(ahead.Add(time.Second)))
	if kept := j.count("behind-%d", 100, at(behind.Add(2*time.Minute))); kept != 0 {
		t.Fatalf("restored at the same parallelism: %d of 100 repeats of the lagging partition within the TTL kept; the run without the restart dropped them", kept)
	}
}

// Found by a review (failed before the fix): the same for records without a timestamp (Kafka's -1 ms,
// or a zero time.Time): among current records their repeats are dropped
// while the job runs, and they expire nobody's memory, but every restore
// forgets them.
func TestReviewStateDedupRecordsWithoutATimestampKeepTheirMemoryAcrossARestore(t *testing.T) {
	j := newStateJob(t, 128)
	cfg := DedupConfig{Name: "d", Key: "id", TTL: 10 * time.Minute}
	j.start(2, cfg)
	j.count("now-%d", 100, at(t0))
	j.count("minus-one-%d", 20, at(time.UnixMilli(-1)))
	j.count("zero-%d", 20, at(time.Time{}))
	if kept := j.count("now-%d", 100, at(t0.Add(time.Minute))) + j.count("minus-one-%d", 20, at(time.UnixMilli(-1))) +
		j.count("zero-%d", 20, at(time.Time{})); kept != 0 {
		t.Fatalf("while running: %d of 140 repeats kept", kept)
	}
	j.checkpoint()
	j.crash()
	j.start(3, cfg)
	if kept := j.count("now-%d", 100, at(t0.Add(2*time.Minute))); kept != 0 {
		t.Fatalf("after a restore, %d of 100 repeats of current values kept", kept)
	}
	if kept := j.count("minus-one-%d", 20, at(time.UnixMilli(-1))) + j.count("zero-%d", 20, at(time.Time{})); kept != 0 {
		t.Fatalf("after a restore, %d of 40 repeats of records without a timestamp kept; the run without the restart dropped them", kept)
	}
}

// farFuture is a record time a producer's clock or unit bug can give (a
// CreateTime in microseconds read as milliseconds: year 58,000).
var farFuture = time.UnixMilli(t0.UnixMicro())

// Found by a review (failed before the fix): after a record far ahead (a
// producer's clock or unit bug), the values seen since are
// remembered while the job runs (TestDedupStateStaysBoundedBehindARecord
// FarAhead), but not across a restore: the far-future entry is in the
// state for good (its bucket is the newest's, never expired), the restored
// dedup takes it as the newest record time (load), and its first record
// expires everything else. So every restart, crash or rescale from then on
// forgets every value (a rescale spreads it to every worker that gets
// key groups of that one): their repeats after it are kept.
func TestReviewStateDedupMemoryBehindAFarFutureRecordSurvivesARestore(t *testing.T) {
	j := newStateJob(t, 128)
	cfg := DedupConfig{Name: "d", Key: "id", TTL: 10 * time.Minute}
	j.start(2, cfg)
	j.apply("bogus", farFuture)
	j.count("v-%d", 100, every(time.Second))
	if kept := j.count("v-%d", 100, at(t0.Add(2*time.Minute))); kept != 0 {
		t.Fatalf("before the restore: %d of 100 repeats kept (the running dedup is expected to remember them)", kept)
	}
	j.checkpoint()
	j.crash()
	j.start(1, cfg) // every worker's state now behind the far-future entry
	if kept := j.count("v-%d", 100, at(t0.Add(3*time.Minute))); kept != 0 {
		t.Fatalf("restored (parallelism 2 -> 1) after a record of %v: %d of 100 repeats within the TTL kept", farFuture.UTC(), kept)
	}
}

// Found by a review (failed before the fix): a dedup renamed (transforms[].name; or removed while
// another dedup keeps the job stateful) leaves its state behind for good:
// no Dedup expires a namespace no dedup has any more, so it stays in every
// full snapshot and is read at every rescale, however many TTLs pass; and
// a dedup given that name again later loads it as its own memory.
func TestReviewStateDedupRenamedLeavesNoStateForever(t *testing.T) {
	j := newStateJob(t, 8)
	j.start(1, DedupConfig{Name: "a", Key: "id", TTL: time.Minute})
	j.count("v-%d", 200, every(time.Second))
	j.checkpoint()
	j.crash()
	j.start(1, DedupConfig{Name: "b", Key: "id", TTL: time.Minute})
	for h := range 10 { // ten hours of records, 600 TTLs
		j.count(fmt.Sprintf("h%d-%%d", h), 60, func(i int) time.Time { return t0.Add(time.Duration(h+1)*time.Hour + time.Duration(i)*time.Minute) })
		j.checkpoint()
	}
	left := 0
	err := j.stores[0].Scan([]byte("transform/dedup/a/"), []byte("transform/dedup/a0"), func(_, _ []byte) error { left++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if left > 0 {
		t.Fatalf("10 hours (600 TTLs) after dedup a was renamed b, the state still holds %d KV entries (runs of values) of a", left)
	}
}
