package postgres

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/connector-dev/connector/internal/pgtest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

func writeKV(t *testing.T, w sink.Writer, key, version int) {
	t.Helper()
	writeKVAt(t, w, key, version, 0)
}

// writeKVAt writes the record at offset off.
func writeKVAt(t *testing.T, w sink.Writer, key, version int, off int64) {
	t.Helper()
	v := fmt.Appendf(nil, `{"k":%d,"v":%d}`, key, version)
	if err := w.Write(ctx, &record.Record{Offset: off, Value: v}); err != nil {
		t.Fatalf("Write(%s): %v", v, err)
	}
}

// TestUpsertKeepsOneRowPerKeyWithTheLastValue: keys repeated within a
// checkpoint, across checkpoints, and written again after a crash (from
// the spool) leave one row per key holding its last value.
func TestUpsertKeepsOneRowPerKeyWithTheLastValue(t *testing.T) {
	e := newEnv(t, `CREATE TABLE kv (k bigint PRIMARY KEY, v bigint NOT NULL)`)
	upsert := func(c *Config) { c.Table, c.Mode, c.Key = "kv", ModeUpsert, []string{"k"} }
	s := e.sink(1, upsert)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	for k := range 100 {
		writeKV(t, w, k, 1)
		writeKV(t, w, k, 2) // within the checkpoint: the later wins
	}
	commit(t, s, preCommit(t, w, 1))
	w.Committed(1)
	for k := range 50 {
		writeKV(t, w, k, 3) // across checkpoints
	}
	cs := preCommit(t, w, 2)
	// The process dies before checkpoint 2 commits; the next one writes it
	// again from the spool, and then the source replays nothing more.
	_ = w.Close()
	_ = s.Close()
	s2 := e.sink(1, upsert)
	recoverSink(t, s2, cs)
	_ = s2.Close()
	recoverSink(t, e.sink(1, upsert), cs) // and once more: idempotent
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM kv`); n != 100 {
		t.Errorf("%d rows, want 100", n)
	}
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM kv WHERE v = CASE WHEN k < 50 THEN 3 ELSE 2 END`); n != 100 {
		t.Errorf("%d of 100 rows hold their key's last value", n)
	}
	e.requireNothingLeft()
}

// TestUpsertRowACheckRefusesFailsThePreCommit: upsert stages rows in a
// table of the target's columns, without its constraints; a row a CHECK
// of the target refuses, among those the merge would write, must be
// refused at pre-commit, as insert mode refuses it (its checkpoint never
// completes). Before, the row passed, its checkpoint completed, and the
// merge failed at every commit of it. A check on a column the sink does
// not write cannot be tested before the merge; it is named at the start
// with the other constraints only the merge meets.
func TestUpsertRowACheckRefusesFailsThePreCommit(t *testing.T) {
	e := newEnv(t, `CREATE TABLE kv (k bigint PRIMARY KEY, v bigint NOT NULL, w bigint NOT NULL DEFAULT 0,
		CONSTRAINT small CHECK (v < 1000), CONSTRAINT wide CHECK (w >= 0 OR v < 5000), CONSTRAINT one_v UNIQUE (v))`)
	upsert := func(c *Config) { c.Table, c.Mode, c.Key = "kv", ModeUpsert, []string{"k"} }
	s := e.sink(1, upsert)
	recoverSink(t, s, nil)
	if !slices.Equal(s.plan.mergeOnly, []string{"one_v", "wide"}) {
		t.Errorf("constraints only the merge meets: %q, want one_v and wide", s.plan.mergeOnly)
	}
	w := newTestWriter(t, s, 0)
	writeKVAt(t, w, 1, 1, 1)
	writeKVAt(t, w, 2, 1000, 2)
	_, err := w.PreCommit(ctx, 1)
	if !errors.Is(err, sink.ErrLost) || !strings.Contains(err.Error(), `violates check constraint "small"`) ||
		!strings.Contains(err.Error(), "the record at /0 offset 2") {
		t.Fatalf("PreCommit: %v; want ErrLost naming the constraint and the record", err)
	}
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM kv`); n != 0 {
		t.Errorf("%d rows committed", n)
	}
}

// TestUpsertRowALaterRowOfItsKeyReplacesIsNotChecked: the merge writes
// only the last row of each key of a checkpoint; a row the table's check
// would refuse, replaced by a later row of its key in the same checkpoint,
// never reaches the table and must not stop the job.
func TestUpsertRowALaterRowOfItsKeyReplacesIsNotChecked(t *testing.T) {
	e := newEnv(t, `CREATE TABLE kv (k bigint PRIMARY KEY, v bigint NOT NULL, CONSTRAINT small CHECK (v < 1000))`)
	upsert := func(c *Config) { c.Table, c.Mode, c.Key = "kv", ModeUpsert, []string{"k"} }
	s := e.sink(1, upsert)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	writeKV(t, w, 1, 5000) // refused by "small" ...
	writeKV(t, w, 1, 5)    // ... but replaced in the same checkpoint
	commit(t, s, preCommit(t, w, 1))
	if n := pgtest.QueryInt(t, e.dsn, `SELECT v FROM kv WHERE k = 1`); n != 5 {
		t.Errorf("v = %d, want 5", n)
	}
}

// TestUpsertWholeRowCheckIsLeftToTheMerge: a check on the whole row
// (conkey {0}) names the table's row type, which the staged rows do not
// have: it is left to the merge, and the job starts and commits.
func TestUpsertWholeRowCheckIsLeftToTheMerge(t *testing.T) {
	e := newEnv(t, `CREATE TABLE kv (k bigint PRIMARY KEY, v bigint, CONSTRAINT all_set CHECK (num_nulls(kv.*) = 0))`)
	upsert := func(c *Config) { c.Table, c.Mode, c.Key = "kv", ModeUpsert, []string{"k"} }
	s := e.sink(1, upsert)
	recoverSink(t, s, nil)
	if !slices.Equal(s.plan.mergeOnly, []string{"all_set"}) || s.plan.checkSQL != "" {
		t.Errorf("merge-only constraints %q, checks at pre-commit %q; want all_set left to the merge", s.plan.mergeOnly, s.plan.checkNames)
	}
	w := newTestWriter(t, s, 0)
	writeKV(t, w, 1, 1)
	commit(t, s, preCommit(t, w, 1))
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM kv`); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

// TestUpsertRowACheckFailsOnFailsThePreCommit: a check whose expression
// fails on a row (a division by zero) fails the merge as a refusal would,
// at every commit; it must fail the pre-commit instead, naming the error.
func TestUpsertRowACheckFailsOnFailsThePreCommit(t *testing.T) {
	e := newEnv(t, `CREATE TABLE kv (k bigint PRIMARY KEY, v bigint NOT NULL, CONSTRAINT ratio CHECK (100 / v > 0))`)
	upsert := func(c *Config) { c.Table, c.Mode, c.Key = "kv", ModeUpsert, []string{"k"} }
	s := e.sink(1, upsert)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	writeKV(t, w, 1, 5)
	writeKV(t, w, 2, 0)
	_, err := w.PreCommit(ctx, 1)
	if !errors.Is(err, sink.ErrLost) || !strings.Contains(err.Error(), "division by zero") || !strings.Contains(err.Error(), "ratio") {
		t.Fatalf("PreCommit: %v; want ErrLost naming the check and its error", err)
	}
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM kv`); n != 0 {
		t.Errorf("%d rows committed", n)
	}
}
