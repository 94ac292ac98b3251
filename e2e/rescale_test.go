package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRescalingAStatefulJobUnderSIGKILLKeepsDedupExact: a job with keyed
// state (dedup over 200,000 ids, every 20th id produced twice) runs at
// parallelism 2, then 3, then 1, while the ids are produced. In each phase
// it is SIGKILLed at random moments and restarted, then stopped with
// SIGTERM (a final checkpoint at that parallelism). The next phase's
// restarts restore that checkpoint's state split (2 -> 3) or merged (3 ->
// 1) by key group. The visible output holds every id exactly once: no id
// lost, no duplicate let through by a worker that did not get the state of
// its key groups.
func TestRescalingAStatefulJobUnderSIGKILLKeepsDedupExact(t *testing.T) {
	const (
		n             = 200_000
		rate          = 6_000
		killsPerPhase = 7
	)
	b := cluster(t)
	dedup := []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}}
	j := newJob(t, b, jobSpec{Partitions: 6, Parallelism: 2, Transforms: dedup})
	rng := newRand(t)
	prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: rate, DupEvery: 20})

	kills := 0
	for _, parallelism := range []int{2, 3, 1} {
		j.spec.Parallelism = parallelism
		for range killsPerPhase {
			p := j.start()
			delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(2700*time.Millisecond)))
			if p.wait(delay) {
				j.fatalf(p, "%s ended by itself before the kill planned at %v: %s", p, delay.Round(time.Millisecond), p.status())
			}
			j.kill(p)
			kills++
		}
		// A final checkpoint at this parallelism: the next phase rescales
		// from it.
		p := j.start()
		j.waitReady(p, time.Minute)
		j.terminate(p, time.Minute)
		t.Logf("parallelism %d: %d ids produced so far", parallelism, prod.sent.Load())
	}

	prod.wait(t, 2*time.Minute)
	p := j.start()
	j.waitForAll(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, kills, fmt.Sprintf("input_duplicates=%d", prod.dups.Load()))

	// Each change of parallelism was restored by every new worker from the
	// old ones' key groups: 3 workers after 2 -> 3, 1 after 3 -> 1.
	type rescaled struct {
		Worker    int      `json:"worker"`
		KeyGroups string   `json:"key_groups"`
		From      []string `json:"from"`
	}
	var workers = map[string]bool{}
	for _, r := range logLines[rescaled](j, "state restored and rescaled") {
		workers[fmt.Sprintf("%d of %s", r.Worker, r.KeyGroups)] = true
	}
	t.Logf("workers restored from other workers' key groups: %v", workers)
	for _, want := range []string{"0 of [0,43)", "1 of [43,86)", "2 of [86,128)", "0 of [0,128)"} {
		if !workers[want] {
			t.Errorf("no rescaled restore of worker %s", want)
		}
	}
	// Workers 1 and 2, which parallelism 1 no longer has, left no working
	// directory (a whole state database each) in state.dir: the first start
	// at parallelism 1 removed them.
	entries, err := os.ReadDir(filepath.Join(j.stateDir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, "worker-1") || strings.HasPrefix(name, "worker-2") {
			t.Errorf("state.dir/work/%s is left from a worker the job no longer has", name)
		}
	}
}
