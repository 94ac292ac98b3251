package pgtest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/connector-dev/connector/internal/pgtest"
)

// fatalRecorder is a testing.TB whose Fatal ends only the goroutine that
// called it and records the message.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// TestDSNFailsWhenUnset: without PG_DSN a test asking for PostgreSQL fails,
// saying how to start it; it does not skip.
func TestDSNFailsWhenUnset(t *testing.T) {
	t.Setenv(pgtest.EnvDSN, "")
	r := &fatalRecorder{TB: t}
	done := make(chan string, 1)
	go func() {
		defer close(done)
		dsn := pgtest.DSN(r)
		done <- dsn
	}()
	if dsn, returned := <-done; returned {
		t.Fatalf("DSN returned %q with PG_DSN unset; want a fatal failure", dsn)
	}
	for _, want := range []string{"PG_DSN", "scripts/postgres start", "scripts/test"} {
		if !strings.Contains(r.msg, want) {
			t.Errorf("failure message %q does not mention %q", r.msg, want)
		}
	}
}

// TestServerIsStock: the server answers, and it is a stock server: no
// prepared transactions (max_prepared_transactions = 0, so PREPARE
// TRANSACTION fails), fsync on.
func TestServerIsStock(t *testing.T) {
	dsn := pgtest.DSN(t)
	version := pgtest.QueryInt(t, dsn, "select current_setting('server_version_num')::bigint")
	t.Logf("PostgreSQL server_version_num %d", version)
	if version < 150000 {
		t.Errorf("server_version_num = %d; want PostgreSQL 15 or later", version)
	}
	if n := pgtest.QueryInt(t, dsn, "select current_setting('max_prepared_transactions')::bigint"); n != 0 {
		t.Errorf("max_prepared_transactions = %d; want 0 (stock)", n)
	}
	if n := pgtest.QueryInt(t, dsn, "select (current_setting('fsync') = 'on')::int"); n != 1 {
		t.Errorf("fsync is off; want on")
	}
	if n := pgtest.QueryInt(t, dsn, "select current_setting('max_connections')::bigint"); n < 100 {
		t.Errorf("max_connections = %d; want at least 100 for the tests", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn := pgtest.Connect(t, pgtest.DB(t))
	if _, err := conn.Exec(ctx, "begin"); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, "prepare transaction 'pgtest'")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55000" {
		t.Fatalf("PREPARE TRANSACTION: err = %v; want SQLSTATE 55000 (prepared transactions are disabled)", err)
	}
	t.Logf("PREPARE TRANSACTION on the stock server: %v", err)
}

// TestDBFreshIsolatedDropped: each DB is a new, empty database of its own; a
// table made in one is absent from the other; both are dropped when the test
// ends, even with a connection still open to one of them.
func TestDBFreshIsolatedDropped(t *testing.T) {
	admin := pgtest.DSN(t)
	var names []string
	var leaked *pgx.Conn
	t.Run("sub", func(t *testing.T) {
		a, b := pgtest.DB(t), pgtest.DB(t)
		if a == b || a == admin {
			t.Fatalf("DB returned %q and %q (PG_DSN %q); want two new DSNs", a, b, admin)
		}
		for _, dsn := range []string{a, b} {
			conn := pgtest.Connect(t, dsn)
			var name string
			if err := conn.QueryRow(context.Background(), "select current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(name, "t_testdbfreshisolateddropped_sub_") || len(name) > 63 {
				t.Errorf("database name %q: want t_<test name>_<random>, at most 63 bytes", name)
			}
			names = append(names, name)
			if n := pgtest.QueryInt(t, dsn, `select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace
				where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'`); n != 0 {
				t.Errorf("fresh database %s has %d relations outside the catalogs; want 0", name, n)
			}
		}
		if names[0] == names[1] {
			t.Fatalf("both databases are named %s", names[0])
		}

		pgtest.Exec(t, a, "create table t (id int primary key)")
		pgtest.Exec(t, a, "insert into t select generate_series(1, $1::int)", 3)
		if n := pgtest.QueryInt(t, a, "select count(*) from t"); n != 3 {
			t.Errorf("a: %d rows; want 3", n)
		}
		if n := pgtest.QueryInt(t, b, "select count(*) from pg_tables where schemaname = 'public'"); n != 0 {
			t.Errorf("b sees %d tables in public; want 0 (a's table must not be visible)", n)
		}

		// A connection left open (as by a connector process still running)
		// must not stop the drop.
		var err error
		if leaked, err = pgx.Connect(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	})
	if leaked != nil {
		defer leaked.Close(context.Background())
	}
	if len(names) != 2 {
		t.Fatalf("the subtest failed before making two databases")
	}
	if n := pgtest.QueryInt(t, admin, "select count(*) from pg_database where datname = any($1)", names); n != 0 {
		t.Errorf("%d of the databases %v still exist after the test; want them dropped", n, names)
	}
}

// TestRestart: Restart restarts the server (a connection opened before it is
// broken, the postmaster start time moves), what committed before survives,
// and the server answers afterwards.
func TestRestart(t *testing.T) {
	admin := pgtest.DSN(t)
	db := pgtest.DB(t)
	pgtest.Exec(t, db, "create table t (id int primary key)")
	pgtest.Exec(t, db, "insert into t select generate_series(1, 100)")
	const startedSQL = "select (extract(epoch from pg_postmaster_start_time()) * 1000000)::bigint"
	before := pgtest.QueryInt(t, admin, startedSQL)
	old := pgtest.Connect(t, db)

	pgtest.Restart(t)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := old.Ping(ctx); err == nil {
		t.Errorf("a connection opened before Restart still answers; want it broken by the restart")
	}
	if after := pgtest.QueryInt(t, admin, startedSQL); after <= before {
		t.Errorf("pg_postmaster_start_time did not move (%d, then %d): the server did not restart", before, after)
	}
	if n := pgtest.QueryInt(t, db, "select count(*) from t"); n != 100 {
		t.Errorf("after restart: %d rows; want the 100 committed before", n)
	}
	pgtest.Exec(t, db, "insert into t values (101)")
	if n := pgtest.QueryInt(t, db, "select count(*) from t"); n != 101 {
		t.Errorf("after restart and insert: %d rows; want 101", n)
	}
}
