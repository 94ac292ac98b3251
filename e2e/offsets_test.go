package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCommittedOffsetsEqualCheckpointAndPartitionEnds: after a job has
// drained its topic (with a SIGKILL and a restart on the way) and stopped on
// SIGTERM, the consumer group's committed offsets equal the end offset of
// every partition, and equal the source offsets in the newest checkpoint as
// `connector checkpoints show` prints them.
func TestCommittedOffsetsEqualCheckpointAndPartitionEnds(t *testing.T) {
	const n = 30_000
	b := cluster(t)
	j := newJob(t, b, jobSpec{Parallelism: 4, Partitions: 6})
	prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: 6_000})

	p := j.start()
	j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 2 }, 50*time.Millisecond, 30*time.Second)
	j.kill(p)
	prod.wait(t, time.Minute)
	p = j.start()
	j.waitForAll(p, n, 90*time.Second)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 1, "")

	ends := endOffsets(t, b, j.topic)
	total := int64(0)
	for _, o := range ends {
		total += o
	}
	if len(ends) != 6 || total != n {
		t.Fatalf("topic %s: end offsets %v (sum %d), want 6 partitions holding %d records", j.topic, ends, total, n)
	}

	committed := committedOffsets(t, b, j.name, j.topic)
	t.Logf("end offsets %v; group %s committed %v", sorted(ends), j.name, sorted(committed))
	if !equalOffsets(committed, ends) {
		t.Errorf("group %s committed offsets %v, want the partition ends %v", j.name, sorted(committed), sorted(ends))
	}

	out, err := j.command(30*time.Second, "checkpoints", "show", "--config", j.cfgPath)
	if err != nil {
		if strings.Contains(string(out), `unknown command "checkpoints"`) {
			t.Fatalf("checkpoint offsets NOT CHECKED: `connector checkpoints show` does not exist yet")
		}
		t.Fatalf("connector checkpoints show --config %s: %v\n%s", j.cfgPath, err, out)
	}
	cp, err := checkpointOffsets(out, j.topic)
	if err != nil {
		t.Fatalf("offsets in `connector checkpoints show`: %v\n%s", err, out)
	}
	t.Logf("newest checkpoint's offsets %v", sorted(cp))
	if !equalOffsets(cp, committed) {
		t.Errorf("newest checkpoint's offsets %v, want the group's committed offsets %v", sorted(cp), sorted(committed))
	}
}

// sorted prints offsets in partition order: "[0:12 1:40]".
func sorted(m map[int32]int64) []string {
	var s []string
	for _, p := range slices.Sorted(maps.Keys(m)) {
		s = append(s, fmt.Sprintf("%d:%d", p, m[p]))
	}
	return s
}
