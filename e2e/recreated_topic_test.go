package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestATopicRecreatedWhileRunningStopsTheJobAndOnlyEarliestReadsItAgain: a
// job reads a topic, whose ids are visible and checkpointed; the topic is
// then deleted and made again under the same name (a new topic ID), and new
// ids go into it, more in every partition than the old offsets, so that a
// reader going on at its old offsets would find records there. The running
// process stops by itself with exit status 1, its failure naming the topic,
// both topic IDs and source.on_position_lost (it notices at its next topic
// check, every 10 s, which the config cannot shorten). A restart with the
// default refuses at once, the same way, without a restart in process and
// without writing anything. A restart with source.on_position_lost: earliest
// reads the new topic from its start: in the end every old and every new id
// is visible exactly once.
//
// Two ways the topic goes away are forced:
//
//   - recreated-at-once: made again right after its deletion, so the
//     running job finds a topic of the same name with another ID;
//   - deleted-then-recreated: made again only once the job has noticed the
//     deletion and restarted, while it waits for the topic to exist; it is
//     not ready meanwhile, and /readyz and /api/checkpoints say why.
func TestATopicRecreatedWhileRunningStopsTheJobAndOnlyEarliestReadsItAgain(t *testing.T) {
	b := cluster(t)
	t.Run("recreated-at-once", func(t *testing.T) { recreatedTopic(t, b, false) })
	t.Run("deleted-then-recreated", func(t *testing.T) { recreatedTopic(t, b, true) })
}

func recreatedTopic(t *testing.T, b kafkatest.Brokers, waitForDeletion bool) {
	const (
		partitions = 4
		oldIDs     = 200 // ids [0, 200) go into the topic as first made
		n          = 800 // ids [200, 800) into the topic made again
		// The topic check runs every 10 s (source discover interval; no
		// config key sets it); then a restart backs off 1 s and restores.
		notice = 60 * time.Second
	)
	j := newJob(t, b, jobSpec{Partitions: partitions, Parallelism: 2})
	p := j.start()
	produceIDs(t, b, j.topic, 0, oldIDs, false)
	j.waitForAll(p, oldIDs, 90*time.Second)
	j.waitCheckpointAtEnd(p, time.Minute)
	oldEnds := endOffsets(t, b, j.topic)
	oldID := topicID(t, b, j.topic)

	deleteTopic(t, b, j.topic)
	if waitForDeletion {
		why := j.waitRestart(p, notice)
		t.Logf("%s noticed the deletion: %s", p, why)
		if !strings.Contains(why, j.topic) {
			j.errorf(p, "%s restarted for %q, want the deleted topic %s named", p, why, j.topic)
		}
		// The restart waits for the topic to exist again: not ready.
		j.waitNotReady(p, 30*time.Second)
	}
	newID := createTopicAgain(t, b, j.topic, partitions)
	produceIDs(t, b, j.topic, oldIDs, n, false)
	newEnds := endOffsets(t, b, j.topic)
	t.Logf("topic %s: id %s with ends %v, made again as id %s with ends %v", j.topic, oldID, sorted(oldEnds), newID, sorted(newEnds))
	for part, end := range oldEnds {
		// Ids are keyed, so where they land is the same in every run.
		if newEnds[part] <= end {
			t.Fatalf("partition %d: the new topic ends at %d, not past the old end %d: the case is not forced", part, newEnds[part], end)
		}
	}

	want := []string{j.topic, oldID.String(), newID.String(), "source.on_position_lost"}
	j.requireFailure(p, notice, want...)
	t.Logf("%s restarted in process before it stopped, for: %q", p, j.restartErrors(p))

	p = j.start()
	j.requireFailure(p, time.Minute, want...)
	j.requireNoRestart(p)
	mid, err := j.out.read()
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	if tl := tallyOutput(mid, oldIDs); !tl.ok() {
		t.Errorf("before a restart may read the new topic, the output is not the old ids exactly once: %s", tl)
	}

	j.spec.Config = map[string]map[string]any{"source": {"on_position_lost": "earliest"}}
	p = j.start()
	j.waitForAll(p, n, 2*time.Minute)
	j.waitCheckpointAtEnd(p, time.Minute)
	lost := map[int32]string{}
	for _, l := range j.logsWithField(p, "error", "topic", j.topic) {
		part, _ := l["partition"].(float64)
		lost[int32(part)] = fmt.Sprint(l["why"])
	}
	if len(lost) != partitions {
		j.errorf(p, "%s: error log lines for the lost positions of partitions %v, want one for each of the %d",
			p, slices.Sorted(maps.Keys(lost)), partitions)
	}
	for part, why := range lost {
		if !strings.Contains(why, newID.String()) {
			j.errorf(p, "%s: partition %d lost its position because %q, want the new topic id %s named", p, part, why, newID)
		}
	}
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, fmt.Sprintf("old_ids=%d new_ids=%d", oldIDs, n-oldIDs))
}
