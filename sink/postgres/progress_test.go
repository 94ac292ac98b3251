package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/connector-dev/connector/internal/pgtest"
	"github.com/connector-dev/connector/sink"
)

// TestCommittedAfterReadsTheProgressInTheTablesSchema: with sink.table in
// a schema other than the search path's, Recover keeps the progress in
// that schema (analytics.connector_progress). CommittedAfter, which the
// runtime asks before Recover at every start, read the unqualified
// connector_progress: it reported nothing committed, and the runtime's
// checks (a checkpoint dir reset, a damaged newest checkpoint) passed, so
// a start behind the progress table went on.
func TestCommittedAfterReadsTheProgressInTheTablesSchema(t *testing.T) {
	e := newEnv(t, `CREATE SCHEMA analytics`, strings.Replace(ordersTable, "orders", "analytics.orders", 1))
	inSchema := func(c *Config) { c.Table = "analytics.orders" }
	committedThrough5(t, e, inSchema)

	later, err := e.sink(1, inSchema).CommittedAfter(ctx, 0) // the next start, from a reset checkpoint dir
	if err != nil {
		t.Fatalf("CommittedAfter: %v", err)
	}
	if len(later) != 1 || !strings.Contains(later[0], "writer 0 committed checkpoint 5") || !strings.Contains(later[0], "analytics") {
		t.Fatalf("CommittedAfter(0) = %q, want writer 0 at checkpoint 5 of analytics.connector_progress", later)
	}
}

// TestAStartBehindTheProgressTableLeavesNoTransactionOpen: a job that
// starts behind its progress table (checkpoint.on_unrestorable: fall_back
// restored an older checkpoint) pre-commits checkpoints whose numbers the
// table counts as committed. Their Commit was skipped and left the
// transaction open on the slot's connection: the slot's next BEGIN (a
// no-op inside it) carried those rows into a later checkpoint's
// transaction. The transaction is rolled back now (said at error level),
// and the later checkpoint commits its own rows only.
func TestAStartBehindTheProgressTableLeavesNoTransactionOpen(t *testing.T) {
	e := newEnv(t, ordersTable)
	committedThrough5(t, e, nil)

	s2 := e.sink(1, nil)
	recoverSink(t, s2, nil)
	w2 := newTestWriter(t, s2, 0)
	write(t, w2, 100, 110)
	commit(t, s2, preCommit(t, w2, 1)) // <= 5: counted as committed
	w2.Committed(1)
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`); n != 0 {
		t.Fatalf("%d sessions idle in a transaction after the skipped commit, want none", n)
	}
	write(t, w2, 200, 210)
	commit(t, s2, preCommit(t, w2, 6))
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM orders WHERE id >= 100 AND id < 110`); n != 0 {
		t.Errorf("checkpoint 6's commit made %d rows of the skipped checkpoint 1 visible, want none", n)
	}
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM orders WHERE id >= 200`); n != 10 {
		t.Errorf("checkpoint 6 made %d of its rows visible, want 10", n)
	}
}

// TestAnUpsertKeyOnADeferrableUniqueIsRefusedAtStart: ON CONFLICT cannot
// take a deferrable unique constraint as its arbiter; the sink accepted
// one, and the problem showed at the first Commit, after its checkpoint
// completed, and at every Recover after.
func TestAnUpsertKeyOnADeferrableUniqueIsRefusedAtStart(t *testing.T) {
	e := newEnv(t, `CREATE TABLE kv (k bigint NOT NULL, v bigint NOT NULL, CONSTRAINT kv_k UNIQUE (k) DEFERRABLE)`)
	upsert := func(c *Config) { c.Table, c.Mode, c.Key = "kv", ModeUpsert, []string{"k"} }
	err := e.sink(1, upsert).Recover(ctx, nil)
	if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), "not deferrable") {
		t.Fatalf("Recover with sink.key on a deferrable unique constraint: %v, want ErrInvalidConfig saying so", err)
	}
}

// committedThrough5 runs a process of the job that commits rows 0-9 as
// checkpoint 5 of writer 0, and stops.
func committedThrough5(t *testing.T, e *env, mod func(*Config)) {
	t.Helper()
	s := e.sink(1, mod)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 10)
	commit(t, s, preCommit(t, w, 5))
	w.Committed(5)
	_ = w.Close()
	_ = s.Close()
}
