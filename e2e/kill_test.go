package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestExactlyOnceUnderRandomSIGKILL: while 200,000 ids are produced, the
// connector is SIGKILLed at 20 or more random moments (0.3-3 s after each
// start) and restarted each time; then it drains, is stopped with SIGTERM
// (exit 0), and its visible output holds every id exactly once. With a dedup
// transform, some ids are also produced twice on purpose, and still appear
// once, although each copy has a Kafka key of its own (the job is keyed by
// the id: pipeline.key_by); its state.full_snapshot_after is small, so that full snapshots are
// taken often (in the background while the worker writes on, or at a
// barrier after a restart's backlog) and the kills land around them too;
// with a TTL of 5 s, expired state leaves the database between them.
// Which kinds of state restore the kills led to depends on where they
// landed, so they are logged, not required; restore_test.go makes each kind
// on purpose.
func TestExactlyOnceUnderRandomSIGKILL(t *testing.T) {
	b := cluster(t)
	dedup := []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}}
	dedupExpiring := []map[string]any{{"type": "dedup", "key": "id", "ttl": "5s"}}
	keyByID := map[string]map[string]any{"pipeline": {"key_by": "id"}}
	routePartition := map[string]map[string]any{"pipeline": {"route": "partition"}}
	// route is how every run routed records from readers to workers
	// (pipeline.route, as logged): auto keeps a lone reader's records on
	// its worker, and shuffles 6 partitions over 4 readers (2, 2, 1, 1).
	for _, tc := range []struct {
		name  string
		spec  jobSpec
		dups  producerSpec
		route string
	}{
		{"parallelism-1", jobSpec{Parallelism: 1}, producerSpec{}, "partition"},
		{"parallelism-4", jobSpec{Parallelism: 4}, producerSpec{}, "key"},
		// Each reader's records on its own worker, as asked.
		{"parallelism-4-route-partition", jobSpec{Parallelism: 4, Config: routePartition}, producerSpec{}, "partition"},
		{"parallelism-4-dedup", jobSpec{Parallelism: 4, Transforms: dedup, FullSnapshotAfter: "32KiB", Config: keyByID},
			producerSpec{DupEvery: 20, CopyKey: "-copy"}, "key"},
		// The ids' record times (their production) span about 40 s, eight
		// TTLs: each worker expires its oldest buckets (state.Store.Expire,
		// an excise) from about 15 s on, between kills, restores and full
		// snapshots. A copy follows its id within 1,000 ids (0.2 s), well
		// within the TTL.
		{"parallelism-4-dedup-expiring", jobSpec{Parallelism: 4, Transforms: dedupExpiring, FullSnapshotAfter: "32KiB", Config: keyByID},
			producerSpec{DupEvery: 20, CopyKey: "-copy"}, "key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := randomKills(t, b, tc.spec, tc.dups)
			lines := j.logsOf("records go from readers to workers")
			if len(lines) == 0 {
				t.Fatalf("no run logged how records go from readers to workers")
			}
			for _, l := range lines {
				var r struct{ Route string }
				if err := json.Unmarshal(l, &r); err != nil || r.Route != tc.route {
					t.Fatalf("a run routed records by %q (%v), want %q: %s", r.Route, err, tc.route, l)
				}
			}
		})
	}
}

// randomKills runs the kill test of spec; dups says which ids are produced
// twice (DupEvery, CopyKey).
func randomKills(t *testing.T, b kafkatest.Brokers, spec jobSpec, dups producerSpec) *job {
	spec.Partitions = 6
	j := newJob(t, b, spec)
	killAndDrain(t, b, j, dups)
	return j
}

// killAndDrain is the kill test on a job made already (its spec with 6
// partitions), whose output j.out reads.
func killAndDrain(t *testing.T, b kafkatest.Brokers, j *job, dups producerSpec) {
	const (
		n        = 200_000
		rate     = 5_000 // ids/s: production spans about 40 s of kills
		minKills = 20
		maxKills = 40
	)
	spec := j.spec
	dups.N, dups.Rate = n, rate
	prod := startProducer(t, b, j.topic, dups)
	t0 := time.Now()
	kills := j.killWhileProducing(prod, minKills, maxKills)
	mid, err := j.out.read()
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	t.Logf("kill phase: %d kills in %v; %d of %d ids produced; %d ids visible",
		kills, time.Since(t0).Round(time.Millisecond), prod.sent.Load(), n, mid.present(n))
	if tl := tallyOutput(mid, n); tl.duplicates+tl.unexpected+tl.bad > 0 {
		t.Errorf("already after the kill phase: %s", tl)
	}

	prod.wait(t, 2*time.Minute)
	p := j.start()
	// Ready first: the ids may all be visible already (the kill phase
	// committed them), and a SIGTERM before the process set up its
	// handler ends it by the signal (seen in CI: run 25, no log line).
	j.waitReady(p, 2*time.Minute)
	j.waitForAll(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)

	extra := ""
	if dups.DupEvery > 0 {
		extra = fmt.Sprintf("input_duplicates=%d", prod.dups.Load())
	}
	j.requireExactlyOnce(n, kills, extra)
	if spec.Transforms != nil {
		logRestoreKinds(t, j)
	}
}

// logRestoreKinds logs how the workers restored their state over the job's
// runs. It checks nothing: the kinds depend on where random kills landed.
func logRestoreKinds(t *testing.T, j *job) {
	var both, logsOnly, fullOnly int
	for _, r := range logLines[stateRestore](j, "state restored") {
		switch {
		case r.Full != "" && r.Changelogs > 0:
			both++
		case r.Full == "":
			logsOnly++
		default:
			fullOnly++
		}
	}
	t.Logf("worker state restores (not checked; they depend on where the kills landed): %d full snapshot + changelogs, %d changelogs only, %d full snapshot only",
		both, logsOnly, fullOnly)
}

// killWhileProducing starts j and SIGKILLs it at a random moment (0.3 to
// 3 s after the start; the seed is logged, E2E_SEED replays it) for as
// long as prod is producing, at least minKills and at most maxKills times,
// and returns how many kills there were. A run that ends by itself before
// its kill fails the test.
func (j *job) killWhileProducing(prod *producer, minKills, maxKills int) int {
	j.t.Helper()
	rng := newRand(j.t)
	kills := 0
	for kills < maxKills && (kills < minKills || prod.running()) {
		p := j.start()
		delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(2700*time.Millisecond)))
		if p.wait(delay) {
			j.fatalf(p, "%s ended by itself %v after its start, before the kill planned at %v: %s",
				p, time.Since(p.started).Round(time.Millisecond), delay.Round(time.Millisecond), p.status())
		}
		j.kill(p)
		kills++
	}
	return kills
}
