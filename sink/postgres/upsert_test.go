package postgres

import (
	"fmt"
	"testing"

	"github.com/connector-dev/connector/internal/pgtest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

func writeKV(t *testing.T, w sink.Writer, key, version int) {
	t.Helper()
	v := fmt.Appendf(nil, `{"k":%d,"v":%d}`, key, version)
	if err := w.Write(ctx, &record.Record{Value: v}); err != nil {
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
