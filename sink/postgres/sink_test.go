package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/pgtest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// TestRowsAreVisibleOnlyOnceTheirCheckpointCommits: rows written before
// barrier 1 are invisible to other sessions until Commit; then each is
// there once, typed, and the progress row says checkpoint 1. A second
// Commit of the same committables changes nothing.
func TestRowsAreVisibleOnlyOnceTheirCheckpointCommits(t *testing.T) {
	e := newEnv(t, ordersTable)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 2500) // more than a batch
	cs := preCommit(t, w, 1)
	write(t, w, 2500, 2600) // the next transaction
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("%d rows visible before the commit", n)
	}
	commit(t, s, cs)
	w.Committed(1)
	e.requireIDs(0, 2500)
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM orders WHERE amount = id + 0.25 AND customer = 'c' || (id % 7) AND paid = (id % 2 = 0) AND note = 'n' || (id % 100) AND created_at = '2026-11-30T12:00:00Z' AND inserted_at IS NOT NULL`); n != 2500 {
		t.Errorf("%d of 2500 rows hold their values", n)
	}
	if p := pgtest.QueryInt(t, e.dsn, `SELECT checkpoint FROM connector_progress WHERE job = 'orders' AND writer = 0`); p != 1 {
		t.Errorf("progress = %d, want 1", p)
	}
	commit(t, s, cs) // again, as after a crash before Committed
	e.requireIDs(0, 2500)
	cs = preCommit(t, w, 2)
	commit(t, s, cs)
	e.requireIDs(0, 2600)
}

// TestFailedCheckpointsAreCarriedAndCommittedWithTheNext: the transactions
// of two failed checkpoints stay open, hold no lock the next one needs, and
// are committed in order with the next checkpoint that completes.
func TestFailedCheckpointsAreCarriedAndCommittedWithTheNext(t *testing.T) {
	e := newEnv(t, ordersTable)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 10)
	preCommit(t, w, 1) // fails
	write(t, w, 10, 20)
	preCommit(t, w, 2) // fails
	write(t, w, 20, 30)
	cs := preCommit(t, w, 3)
	if len(cs) != 3 {
		t.Fatalf("checkpoint 3 carries %d committables, want 3", len(cs))
	}
	commit(t, s, cs)
	w.Committed(3)
	e.requireIDs(0, 30)
}

// TestACrashLosesNothingTheCheckpointNeeds: a process dies after checkpoint
// 1 is durable, before any commit, with writer 1's transaction committed
// and writer 0's not, and with checkpoint 2's transactions open. The
// connections die with it. The next process commits writer 0's rows from
// the spool, not writer 1's again, drops checkpoint 2's, and leaves no
// transaction, lock or spool file behind.
func TestACrashLosesNothingTheCheckpointNeeds(t *testing.T) {
	e := newEnv(t, ordersTable)
	s := e.sink(2, nil)
	recoverSink(t, s, nil)
	w0, w1 := newTestWriter(t, s, 0), newTestWriter(t, s, 1)
	write(t, w0, 0, 40)
	write(t, w1, 40, 80)
	cs := append(preCommit(t, w0, 1), preCommit(t, w1, 1)...)
	commit(t, s, cs[1:]) // writer 1 only: the crash comes between the two
	write(t, w0, 80, 90)
	preCommit(t, w0, 2) // never completes
	// The crash: the connections end without a commit.
	_ = w0.Close()
	_ = w1.Close()
	_ = s.Close()

	s2 := e.sink(2, nil)
	recoverSink(t, s2, cs)
	e.requireIDs(0, 80)
	e.requireNothingLeft()
	if files, _ := e.fs.List(s2.spoolDir); len(files) != 1 { // the lock file
		t.Errorf("spool files after recovery: %v", files)
	}
}

// TestAConnectionKilledMidRunLosesNothing: the database ends the writer's
// connection (pg_terminate_backend) while it streams rows; the writer goes
// on spooling and the commit writes the transaction again from the spool,
// with no restart of the sink.
func TestAConnectionKilledMidRunLosesNothing(t *testing.T) {
	e := newEnv(t, ordersTable)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 1500)
	pgtest.Exec(t, e.dsn, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'copy%'`)
	write(t, w, 1500, 3000)
	cs := preCommit(t, w, 1)
	commit(t, s, cs)
	w.Committed(1)
	e.requireIDs(0, 3000)
	// The slot's connection is back for the next transaction.
	write(t, w, 3000, 3100)
	commit(t, s, preCommit(t, w, 2))
	e.requireIDs(0, 3100)
	e.requireNothingLeft()
}

// TestAConnectionKilledBeforeCommitLosesNothing: the connection of a
// pre-committed transaction is killed before its checkpoint completes;
// the commit finds it gone and writes the rows again from the spool.
func TestAConnectionKilledBeforeCommitLosesNothing(t *testing.T) {
	e := newEnv(t, ordersTable)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 0, 500)
	cs := preCommit(t, w, 1)
	pgtest.Exec(t, e.dsn, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'`)
	commit(t, s, cs)
	e.requireIDs(0, 500)
}

// TestASecondProcessIsFenced: a second start of the job ends the first's
// sessions (rolling its open transactions back) and takes the progress
// rows over; it commits the checkpoint it restored from the spool, once.
// The first process's later commits fail (ErrInUse, so it stops) and its
// rows never become visible.
func TestASecondProcessIsFenced(t *testing.T) {
	e := newEnv(t, ordersTable)
	first := e.sink(1, nil)
	recoverSink(t, first, nil)
	w := newTestWriter(t, first, 0)
	write(t, w, 0, 100)
	cs := preCommit(t, w, 1)
	second, err := e.trySink(1, nil)
	if !errors.Is(err, sink.ErrInUse) {
		t.Fatalf("a second sink on the same spool dir: %v, want ErrInUse", err)
	}
	_ = second
	// On another machine (its own spool dir) with the same checkpoint
	// (shared storage), the second process restores checkpoint 1.
	other := &env{t: t, dsn: e.dsn, spool: t.TempDir(), fs: e.fs}
	copySpool(t, e, other)
	s2 := other.sink(1, nil)
	recoverSink(t, s2, cs)
	e.requireIDs(0, 100)
	// The first process, alive, commits checkpoint 1 too: its transaction
	// is gone (its session was ended) and the progress row shows the rows
	// committed, so nothing is written twice.
	if err := first.Commit(ctx, cs); err != nil {
		t.Fatalf("the first process's commit of checkpoint 1: %v", err)
	}
	e.requireIDs(0, 100)
	// Whatever it writes next can never be committed: it no longer owns
	// the progress rows.
	w.Committed(1)
	write(t, w, 100, 200)
	err = first.Commit(ctx, preCommit(t, w, 2))
	if !errors.Is(err, sink.ErrInUse) || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("the first process's commit of checkpoint 2: %v, want ErrInUse (fenced)", err)
	}
	e.requireIDs(0, 100)
	e.requireNothingLeft()
}

func copySpool(t *testing.T, from, to *env) {
	t.Helper()
	src := from.fs.PathJoin(from.spool, "orders")
	dst := to.fs.PathJoin(to.spool, "orders")
	if err := to.fs.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := from.fs.List(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == ".lock" {
			continue
		}
		if err := vfsCopy(from, src, to, dst, n); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBadRecordsNameTheColumn: a value that does not fit its column is
// ErrBadRecord naming the column, before anything is spooled or copied;
// the good rows around it commit.
func TestBadRecordsNameTheColumn(t *testing.T) {
	e := newEnv(t, ordersTable)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	for _, tc := range []struct{ value, want string }{
		{`{"id":"x","customer":"a"}`, "column id (bigint)"},
		{`{"id":1.5,"customer":"a"}`, "column id (bigint)"},
		{`{"id":1}`, "column customer is NOT NULL"},
		{`{"id":1,"customer":"a","note":"more than ten"}`, "column note (character varying(10))"},
		{`{"id":1,"customer":"a","paid":"yes"}`, "column paid (boolean)"},
		{`{"id":1,"customer":"a","created_at":"yesterday"}`, "column created_at (timestamp with time zone)"},
		{`{"id":1,"customer":"a","amount":"lots"}`, "column amount (numeric(10,2))"},
		{`[1,2]`, "not a JSON object"},
	} {
		err := w.Write(ctx, &record.Record{Value: []byte(tc.value)})
		if !errors.Is(err, sink.ErrBadRecord) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Write(%s): %v; want ErrBadRecord naming %q", tc.value, err, tc.want)
		}
	}
	write(t, w, 0, 10)
	commit(t, s, preCommit(t, w, 1))
	e.requireIDs(0, 10)
}

// TestStartupChecksNameWhatIsWrong: each problem of the config against the
// database is ErrInvalidConfig naming the key and the object, the key
// attached (cfgkey: its line is printed).
func TestStartupChecksNameWhatIsWrong(t *testing.T) {
	e := newEnv(t, ordersTable, `CREATE TABLE odd (id bigint, shape point)`)
	reader := "reader_" + strings.ToLower(strings.TrimPrefix(pgtest.QueryString(t, e.dsn, `SELECT current_database()`), "t_"))
	pgtest.Exec(t, e.dsn, `CREATE ROLE `+reader+` LOGIN PASSWORD 'reader'`)
	t.Cleanup(func() { pgtest.Exec(t, e.dsn, `DROP OWNED BY `+reader+`; DROP ROLE `+reader) })
	pgtest.Exec(t, e.dsn, `GRANT SELECT ON orders TO `+reader+`; GRANT CREATE, USAGE ON SCHEMA public TO `+reader)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
		key  string
	}{
		{"missing table", func(c *Config) { c.Table = "nope" }, "sink.table: table nope does not exist", "sink.table"},
		{"missing column", func(c *Config) { c.Columns = map[string]string{"id": "id", "colour": "c"} }, "sink.columns: column colour does not exist in orders", "sink.columns"},
		{"unsupported type", func(c *Config) { c.Table = "odd" }, "column shape (point): type not supported", "sink.table"},
		{"upsert without unique index", func(c *Config) { c.Mode, c.Key = ModeUpsert, []string{"customer"} }, "sink.key: orders has no primary key or unique index on exactly (customer)", "sink.key"},
		{"no privilege", func(c *Config) { c.DSN = secretDSN(e.dsn, reader, "reader") }, "sink.table: role " + reader + " lacks INSERT on orders", "sink.table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := (&env{t: t, dsn: e.dsn, spool: t.TempDir(), fs: e.fs}).sink(1, tc.mod)
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := s.Recover(rctx, nil)
			if !errors.Is(err, sink.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Recover: %v; want ErrInvalidConfig naming %q", err, tc.want)
			}
			if key, _ := cfgkey.Of(err); key != tc.key {
				t.Errorf("Recover: key %q attached, want %s", key, tc.key)
			}
		})
	}
}

// TestARowTheTableRefusesStopsTheTaskNamingIt: a row that passes the
// sink's checks but not the table's (a CHECK constraint) fails the
// pre-commit, naming the record and the constraint; the checkpoint never
// holds the refused transaction, and nothing is committed.
func TestARowTheTableRefusesStopsTheTaskNamingIt(t *testing.T) {
	e := newEnv(t, ordersTable, `ALTER TABLE orders ADD CONSTRAINT small CHECK (id < 1000)`)
	s := e.sink(1, nil)
	recoverSink(t, s, nil)
	w := newTestWriter(t, s, 0)
	write(t, w, 998, 1002)
	_, err := w.PreCommit(ctx, 1)
	if !errors.Is(err, sink.ErrLost) || !strings.Contains(err.Error(), `violates check constraint "small"`) ||
		!strings.Contains(err.Error(), "the record at in/0 offset 1000") {
		t.Fatalf("PreCommit: %v; want ErrLost naming the constraint and the record", err)
	}
	if n := pgtest.QueryInt(t, e.dsn, `SELECT count(*) FROM orders`); n != 0 {
		t.Errorf("%d rows committed", n)
	}
}
