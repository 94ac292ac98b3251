package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestPostgresExactlyOnceUnderRandomSIGKILL: the PostgreSQL sink's
// TestExactlyOnceUnderRandomSIGKILL. While 60,000 ids are produced, the
// connector is SIGKILLed at 20 or more random moments (0.3-3 s after each
// start) and restarted each time; then it drains and is stopped with
// SIGTERM (exit 0). The table then holds every id in exactly one row
// (SELECT id, count(*) ... HAVING count(*) <> 1 is empty and no id is
// missing; the table has no key, so a row written twice would show), and
// the job left nothing in the database: no session, so no open
// transaction and no lock, and no prepared transaction. At parallelism 1,
// and at 4 with a dedup transform over input that repeats ids on purpose.
func TestPostgresExactlyOnceUnderRandomSIGKILL(t *testing.T) {
	b := cluster(t)
	dedup := []map[string]any{{"type": "dedup", "key": "id", "ttl": "1h"}}
	for _, tc := range []struct {
		name     string
		spec     jobSpec
		dupEvery int
	}{
		{"parallelism-1", jobSpec{Parallelism: 1}, 0},
		{"parallelism-4-dedup", jobSpec{Parallelism: 4, Transforms: dedup}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) { pgRandomKills(t, b, tc.spec, tc.dupEvery) })
	}
}

func pgRandomKills(t *testing.T, b kafkatest.Brokers, spec jobSpec, dupEvery int) {
	const (
		n        = 60_000
		rate     = 2_000 // ids/s: production spans about 30 s of kills
		minKills = 20
		maxKills = 30
	)
	spec.Partitions = 6
	j := newPGJob(t, b, spec, pgDatabase(t, pgTableDDL), "t", nil)
	prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: rate, DupEvery: dupEvery})
	t0 := time.Now()
	kills := j.killWhileProducing(prod, minKills, maxKills)
	mid := tallyOutput(j.rows(), n)
	t.Logf("kill phase: %d kills in %v; %d of %d ids produced; %d ids in the table",
		kills, time.Since(t0).Round(time.Millisecond), prod.sent.Load(), n, n-mid.missing)
	if mid.duplicates+mid.unexpected > 0 {
		t.Errorf("already after the kill phase: %s", mid)
	}

	prod.wait(t, 2*time.Minute)
	p := j.start()
	j.waitForRows(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)

	// How often a transaction the kills took from the database was written
	// again from its spool (by a start, or by a commit after it).
	extra := fmt.Sprintf("transactions_written_again=%d", j.logCount(msgPGRewritten))
	if dupEvery > 0 {
		extra += fmt.Sprintf(" input_duplicates=%d", prod.dups.Load())
	}
	j.requireRowsExactlyOnce(n, kills, extra)
	j.requireNothingLeftOpen()
}
