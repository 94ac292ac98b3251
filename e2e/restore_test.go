package e2e

import (
	"fmt"
	"testing"
	"time"
)

// restoreBatch is how many new ids each step of the restore test produces:
// enough that every one of 4 workers gets some (ids are spread over workers
// by their Kafka key, which is fixed, so this holds in every run), and few
// enough that no worker gets 100, so that no worker writes 100 changelogs,
// the count at which the state starts a full snapshot whatever its
// state.full_snapshot_after.
const restoreBatch = 48

// TestStateRestoresFromChangelogsAloneAndFromAFullSnapshot: the workers of a
// dedup job restore their keyed state from each kind of chain a checkpoint
// can name, each made on purpose instead of left to where a random kill
// happens to land:
//
//   - changelogs alone: with the default state.full_snapshot_after (64 MiB),
//     a few dozen ids write a few hundred bytes of changelogs per worker, so
//     no full snapshot is ever taken: the checkpoint's chains are changelogs
//     on empty state;
//   - a full snapshot plus changelogs: with state.full_snapshot_after of one
//     byte, every write outgrows the limit at once, so the next barrier
//     takes a full snapshot synchronously and its checkpoint names that
//     snapshot and no changelog. The next run is back on the default: it
//     restores the full snapshot alone, and what it writes becomes
//     changelogs on it, which the run after restores with it.
//
// Every SIGKILL comes once a checkpoint at the partition ends has completed,
// so the restart has nothing to replay: what its workers know of the ids
// before the kill is what they restored. After the last restart every id
// produced so far is produced again as a copy; dedup drops each copy only if
// the restored state is whole, so the visible output holds every id exactly
// once only then.
func TestStateRestoresFromChangelogsAloneAndFromAFullSnapshot(t *testing.T) {
	b := cluster(t)
	spec := jobSpec{
		Parallelism: 4,
		Partitions:  4,
		Transforms:  []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}},
	}
	changelogsAlone := func(r stateRestore) bool { return r.Full == "" && r.Changelogs > 0 }
	fullAlone := func(r stateRestore) bool { return r.Full != "" && r.Changelogs == 0 }
	fullPlusChangelogs := func(r stateRestore) bool { return r.Full != "" && r.Changelogs > 0 }

	t.Run("changelogs-alone", func(t *testing.T) {
		j := newJob(t, b, spec)
		p := j.start()
		j.produceUntilCheckpointedThenKill(p, 0, restoreBatch)
		p = j.start()
		j.requireRestores(p, "changelogs alone", changelogsAlone)
		j.copiesThenExactlyOnce(p, restoreBatch, 2*restoreBatch, 1)
	})

	t.Run("full-snapshot-plus-changelogs", func(t *testing.T) {
		s := spec
		s.FullSnapshotAfter = "1B"
		j := newJob(t, b, s)
		p := j.start()
		j.produceUntilCheckpointedThenKill(p, 0, restoreBatch)

		j.spec.FullSnapshotAfter = "" // the default from here on: writes go to changelogs
		p = j.start()
		full := j.requireRestores(p, "a full snapshot alone", fullAlone)
		j.produceUntilCheckpointedThenKill(p, restoreBatch, 2*restoreBatch)

		p = j.start()
		chained := j.requireRestores(p, "a full snapshot plus changelogs", fullPlusChangelogs)
		for w, r := range chained {
			if r.Full != full[w].Full {
				j.errorf(p, "%s: restored %s, want the changelogs on the full snapshot %s restored before", p, r, full[w].Full)
			}
		}
		j.copiesThenExactlyOnce(p, 2*restoreBatch, 3*restoreBatch, 2)
	})
}

// produceUntilCheckpointedThenKill produces the new ids [from, to), waits
// until a checkpoint at the partition ends completed (so it holds the state
// they wrote), and SIGKILLs p.
func (j *job) produceUntilCheckpointedThenKill(p *proc, from, to int) {
	j.t.Helper()
	produceIDs(j.t, j.brokers, j.topic, from, to, false)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.kill(p)
}

// requireRestores waits until p is ready (it has restored its state by
// then) and requires that every worker restored state, each as want says
// (kind names it for messages). It returns the restores by worker.
func (j *job) requireRestores(p *proc, kind string, want func(stateRestore) bool) map[int]stateRestore {
	j.t.Helper()
	j.waitReady(p, time.Minute)
	byWorker := map[int]stateRestore{}
	for _, r := range logLines[stateRestore](j, "state restored", p) {
		if !want(r) {
			j.errorf(p, "%s: restored %s, want %s", p, r, kind)
		}
		byWorker[r.Worker] = r
	}
	j.t.Logf("%s: %d workers restored state from %s: %v", p, len(byWorker), kind, byWorker)
	if len(byWorker) != j.spec.Parallelism {
		j.fatalf(p, "%s: %d of %d workers restored state (%v); each was given ids, so each has state to restore",
			p, len(byWorker), j.spec.Parallelism, byWorker)
	}
	return byWorker
}

// copiesThenExactlyOnce produces a copy of every id in [0, seen) and the
// new ids [seen, n), waits until a checkpoint at the partition ends
// completed, stops p with SIGTERM and requires every id in [0, n) exactly
// once in the visible output.
func (j *job) copiesThenExactlyOnce(p *proc, seen, n, kills int) {
	j.t.Helper()
	produceIDs(j.t, j.brokers, j.topic, 0, seen, true)
	produceIDs(j.t, j.brokers, j.topic, seen, n, false)
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, kills, fmt.Sprintf("copies_after_restore=%d", seen))
}
