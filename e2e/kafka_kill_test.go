package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestKafkaSinkExactlyOnceUnderRandomSIGKILL: a job writing to a Kafka
// topic (sink.type: kafka) with a dedup transform is SIGKILLed at 20 or
// more random moments (0.3-3 s after each start) while ids are produced,
// some of them twice on purpose, and restarted each time; then it drains
// and stops on SIGTERM (exit 0). A read_committed consumer of the output
// topic, independent of the connector, reads every id exactly once, and
// the source group's committed offsets are the ends of the input. With
// parallelism 1 and 4: one writer, and four writers whose transactions
// are committed one after another.
//
// Where the kills land (mid-transaction, between a checkpoint's metadata
// and its commit, during a restart's recovery) is random and only logged
// (the restarts that produced a checkpoint's transaction again from the
// log); kafka_crashpoints_test.go hits each window on purpose.
func TestKafkaSinkExactlyOnceUnderRandomSIGKILL(t *testing.T) {
	b := cluster(t)
	dedup := []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}}
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
			kafkaRandomKills(t, b, jobSpec{Parallelism: p, Transforms: dedup, KafkaSink: &kafkaSinkSpec{}})
		})
	}
}

func kafkaRandomKills(t *testing.T, b kafkatest.Brokers, spec jobSpec) {
	const (
		n        = 60_000
		rate     = 2_000 // ids/s: production spans about 30 s of kills
		dupEvery = 20
		minKills = 20
		maxKills = 40
	)
	spec.Partitions = 6
	j := newJob(t, b, spec)
	rng := newRand(t)
	prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: rate, DupEvery: dupEvery})

	t0 := time.Now()
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
	mid, err := j.out.read()
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	t.Logf("kill phase: %d kills in %v; %d of %d ids produced; %d ids read_committed so far",
		kills, time.Since(t0).Round(time.Millisecond), prod.sent.Load(), n, mid.present(n))
	if tl := tallyOutput(mid, n); tl.duplicates+tl.unexpected+tl.bad > 0 {
		t.Errorf("already after the kill phase: %s", tl)
	}

	prod.wait(t, 2*time.Minute)
	p := j.start()
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, kills, fmt.Sprintf("input_duplicates=%d produced_again=%d",
		prod.dups.Load(), len(j.logsOf(msgProducedAgain))))
	j.requireGroupAtInputEnd()
}
