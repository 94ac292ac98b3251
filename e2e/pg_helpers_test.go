package e2e

// PostgreSQL sink jobs: a job whose sink is a table of a fresh database on
// the server of PG_DSN (internal/pgtest), and what a reader of that table
// sees. Every query opens a connection of its own and is tried again while
// the server does not answer: tests of other packages may restart the
// shared server at any moment (pgtest.Restart), and a reader must not
// mistake that for a fault of the connector.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/pgtest"
)

// pgTableDDL is the table of most PostgreSQL jobs: the fields of
// recordValue that it has columns for. No key: a row written twice shows
// as two rows, it is not refused.
const pgTableDDL = `CREATE TABLE t (id bigint NOT NULL, customer text, amount numeric(10,2), ts bigint)`

// The contract's metrics the PostgreSQL tests read besides the harness's.
const (
	metricRestarts = "connector_job_restarts_total"
	metricSkipped  = "connector_records_skipped_total"
)

// pgDatabase makes a fresh database on the server of PG_DSN (dropped when
// the test ends), runs ddl in it, and returns its DSN. Without PG_DSN the
// test fails.
func pgDatabase(t *testing.T, ddl ...string) string {
	t.Helper()
	dsn := pgtest.DB(t)
	for _, q := range ddl {
		pgExec(t, dsn, q)
	}
	return dsn
}

// pgJob is a job whose sink is the PostgreSQL table table of the database
// dsn; its spool dir is inside the job's directory.
type pgJob struct {
	*job
	dsn   string
	table string
}

// newPGJob makes a job of spec writing to table of dsn; extra holds more
// sink keys (mode, key, columns, a dsn of its own...), written over the
// defaults.
func newPGJob(t *testing.T, b kafkatest.Brokers, spec jobSpec, dsn, table string, extra map[string]any) *pgJob {
	t.Helper()
	spec.Sink = pgSink(dsn, table, extra)
	j := &pgJob{job: newJob(t, b, spec), dsn: dsn, table: table}
	t.Logf("job %s writes to PostgreSQL table %s of %s, sink %v", j.name, table, pgDescribe(dsn), redactDSN(spec.Sink))
	return j
}

// pgSink is the sink section of a job writing to table of dsn, its spool
// dir spool/<job> in the job's directory, with extra written over it.
func pgSink(dsn, table string, extra map[string]any) map[string]any {
	snk := map[string]any{
		"type":      "postgres",
		"dsn":       dsn,
		"table":     table,
		"spool_dir": "spool", // relative: every run's working directory is the job's
	}
	maps.Copy(snk, extra)
	return snk
}

// redactDSN is the sink section without its password, for the log.
func redactDSN(sink map[string]any) map[string]any {
	out := maps.Clone(sink)
	if dsn, ok := out["dsn"].(string); ok {
		out["dsn"] = pgDescribe(dsn)
	}
	return out
}

// pgDescribe names dsn's server and database without the password.
func pgDescribe(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// ---------------------------------------------------------------------------
// Queries that outlast a restart of the server

// pgRetryFor is how long a query is tried again while the server does not
// answer.
const pgRetryFor = 60 * time.Second

// pgQuery runs fn on a connection of its own to dsn. A failure to reach the
// server (refused, reset, shutting down, starting up) is tried again for up
// to pgRetryFor; any other error fails the test.
func pgQuery(t testing.TB, dsn, what string, fn func(ctx context.Context, conn *pgx.Conn) error) {
	t.Helper()
	deadline := time.Now().Add(pgRetryFor)
	for {
		err := pgTry(dsn, fn)
		if err == nil {
			return
		}
		if !pgUnreachable(err) || time.Now().After(deadline) {
			t.Fatalf("%s on %s: %v", what, pgDescribe(dsn), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func pgTry(dsn string, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	return fn(ctx, conn)
}

// pgUnreachable reports whether err says the server could not be reached
// or went away, rather than that it answered no.
func pgUnreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// pgExec runs sql on dsn.
func pgExec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	pgQuery(t, dsn, sql, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	})
}

// pgInt runs a query of one integer (NULL is 0).
func pgInt(t testing.TB, dsn, sql string, args ...any) int64 {
	t.Helper()
	var n *int64
	pgQuery(t, dsn, sql, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, sql, args...).Scan(&n)
	})
	if n == nil {
		return 0
	}
	return *n
}

// pgStrings runs a query of one text column.
func pgStrings(t testing.TB, dsn, sql string, args ...any) []string {
	t.Helper()
	var out []string
	pgQuery(t, dsn, sql, func(ctx context.Context, conn *pgx.Conn) error {
		out = nil
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var s string
		_, err = pgx.ForEachRow(rows, []any{&s}, func() error {
			out = append(out, s)
			return nil
		})
		return err
	})
	return out
}

// ---------------------------------------------------------------------------
// What the table shows

// rows reads the ids of the table as an output (id -> rows holding it), so
// that tallyOutput judges it as it judges the file sink's files.
func (j *pgJob) rows() output {
	j.t.Helper()
	out := output{counts: map[int64]int{}}
	sql := "SELECT id, count(*) FROM " + pgx.Identifier{j.table}.Sanitize() + " GROUP BY id"
	pgQuery(j.t, j.dsn, sql, func(ctx context.Context, conn *pgx.Conn) error {
		clear(out.counts)
		out.lines = 0
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			return err
		}
		var id, c int64
		_, err = pgx.ForEachRow(rows, []any{&id, &c}, func() error {
			out.counts[id] += int(c)
			out.lines += int(c)
			return nil
		})
		return err
	})
	return out
}

// pgTable is a job's table read as its visible output: the committed
// rows, read in one query (a transaction the job still holds open is not
// seen).
type pgTable struct{ j *pgJob }

func (r pgTable) read() (output, error)    { return r.j.rows(), nil }
func (r pgTable) readAll() (output, error) { return r.j.rows(), nil }

// present counts the distinct ids in [0, n) the table holds.
func (j *pgJob) present(n int) int {
	j.t.Helper()
	return int(pgInt(j.t, j.dsn, "SELECT count(DISTINCT id) FROM "+pgx.Identifier{j.table}.Sanitize()+" WHERE id >= 0 AND id < $1", n))
}

// waitForRows polls the table until it holds every id in [0, n). It fails
// the test when p ends meanwhile or the deadline passes.
func (j *pgJob) waitForRows(p *proc, n int, timeout time.Duration) {
	j.t.Helper()
	t0 := time.Now()
	deadline := t0.Add(timeout)
	for {
		present := j.present(n)
		if present == n {
			j.t.Logf("%s: all %d ids in the table %v after the wait began", p, n, time.Since(t0).Round(time.Millisecond))
			return
		}
		j.requireRunning(p, fmt.Sprintf("waiting for all %d ids in the table (%d there)", n, present))
		if time.Now().After(deadline) {
			recs, _ := p.metric(metricRecordsOut)
			cps, _ := p.metric(metricCheckpoints)
			j.fatalf(p, "after %v only %d of %d ids are in the table; %s: %s=%v %s=%v",
				timeout, present, n, p, metricRecordsOut, recs, metricCheckpoints, cps)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitForRowCount polls the table until it holds at least n rows.
func (j *pgJob) waitForRowCount(p *proc, n int, timeout time.Duration) {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c := pgInt(j.t, j.dsn, "SELECT count(*) FROM "+pgx.Identifier{j.table}.Sanitize())
		if c >= int64(n) {
			return
		}
		j.requireRunning(p, fmt.Sprintf("waiting for %d rows (%d there)", n, c))
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: %d rows after %v, want at least %d", p, c, timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requireRowsExactlyOnce requires every id in [0, n) exactly once in the
// table and nothing else (SELECT id, count(*) ... HAVING count(*) <> 1
// empty, no id missing); it logs the figures in one line.
func (j *pgJob) requireRowsExactlyOnce(n, kills int, extra string) {
	j.t.Helper()
	tl := tallyOutput(j.rows(), n)
	if extra != "" {
		extra = " " + extra
	}
	j.t.Logf("exactly-once in table %s: records=%d kills=%d duplicates=%d missing=%d%s", j.table, n, kills, tl.duplicates, tl.missing, extra)
	if !tl.ok() {
		j.t.Errorf("table %s not exactly once over %d runs: %s", j.table, len(j.runs), tl)
	}
}

// requireNothingLeftOpen requires that no run of the job holds anything in
// the database any more: no session of its own in the test's database
// (the server ends a backend a moment after its client closed the
// connection, so this waits up to 20 s for them to go), hence no open
// transaction and no lock; no prepared transaction; and no spool file left
// in the job's spool dir. Call it after the last run ended.
func (j *pgJob) requireNothingLeftOpen() {
	j.t.Helper()
	for _, p := range j.runs {
		if !p.exited() {
			j.t.Fatalf("harness: requireNothingLeftOpen while %s still runs", p)
		}
	}
	const others = `FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`
	deadline := time.Now().Add(20 * time.Second)
	for {
		sessions := pgStrings(j.t, j.dsn, `SELECT format('pid %s %L state %s xact_start %s query %L', pid, application_name, state, xact_start, left(query, 80)) `+others)
		if len(sessions) == 0 {
			break
		}
		if time.Now().After(deadline) {
			j.t.Errorf("20 s after the last run ended, the database still has %d sessions: %s", len(sessions), strings.Join(sessions, "; "))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Locks of client sessions only: an autovacuum worker (the churn's
	// inserts wake it) holds a lock on the table it vacuums, and no run of
	// the job is behind it. A prepared transaction's locks have no pid;
	// pg_prepared_xacts counts those.
	locks := pgStrings(j.t, j.dsn, `SELECT format('pid %s %s on %s', l.pid, l.mode, coalesce(l.relation::regclass::text, l.locktype)) FROM pg_locks l
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	prepared := pgInt(j.t, j.dsn, `SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()`)
	if len(locks) != 0 || prepared != 0 {
		j.t.Errorf("after the last run: %d locks in the database held by other client sessions (%s), %d prepared transactions; want none", len(locks), strings.Join(locks, "; "), prepared)
	}
	spools, err := filepath.Glob(filepath.Join(j.dir, "spool", "*", "*.spool"))
	if err != nil {
		j.t.Fatal(err)
	}
	if len(spools) > 0 {
		j.t.Errorf("after the last run ended with its final checkpoint, %d spool files are left: %v", len(spools), spools)
	}
	j.t.Logf("after the last run: no session, no lock, no prepared transaction in the database, no spool file")
}

// sessionsOfJob lists the job's sessions (application_name "connector
// ...") in the test's database: state and query of each.
func (j *pgJob) sessionsOfJob() []string {
	return pgStrings(j.t, j.dsn, `SELECT format('pid %s %s: %L', pid, state, left(query, 60)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'connector %' AND pid <> pg_backend_pid()`)
}

// terminateJobSessions ends the sessions of the job with
// pg_terminate_backend and returns how many it ended. A session running an
// INSERT (the sink's progress update) is left alone: killing one that
// writes a transaction again there fails the commit, a product bug that
// TestPostgresSessionKilledWhileAWriteAgainMarksItsProgressNeedsNoRestart
// reproduces on purpose; elsewhere it would only make a test flaky.
func (j *pgJob) terminateJobSessions() int {
	j.t.Helper()
	return int(pgInt(j.t, j.dsn, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'connector %' AND pid <> pg_backend_pid()
		AND NOT (state = 'active' AND starts_with(query, 'INSERT'))`))
}

// requireNoJobRestart requires p to be running and never to have restarted
// the job in process: connector_job_restarts_total is 0 and no log line
// says it restarted.
func (j *job) requireNoJobRestart(p *proc) {
	j.t.Helper()
	j.requireRunning(p, "checking for in-process restarts")
	v, err := p.metric(metricRestarts)
	if err != nil {
		j.fatalf(p, "%s: %v", p, err)
	}
	if errs := j.restartErrors(p); v != 0 || len(errs) > 0 {
		first := ""
		if len(errs) > 0 {
			first = errs[0]
		}
		j.errorf(p, "%s (pid %d) restarted the job in process: %s=%v, first reason: %s", p, p.pid(), metricRestarts, v, first)
		return
	}
	j.t.Logf("%s (pid %d): %s=0, the job never restarted", p, p.pid(), metricRestarts)
}

// waitSettled waits until p's log shows 3 checkpoints completed in a row
// with no warning of the sink among them (nothing lost, written again or
// retried): every transaction the sink holds is a healthy one again, so a
// fault injected now meets no transaction being written again.
func (j *pgJob) waitSettled(p *proc, timeout time.Duration) {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		clean := 0
		for line := range strings.SplitSeq(readLog(j.t, p), "\n") {
			switch {
			case strings.Contains(line, `"message":"checkpoint completed"`):
				clean++
			case strings.Contains(line, `"level":"warn"`) && strings.Contains(line, `"sink":"postgres"`):
				clean = 0
			}
		}
		if clean >= 3 {
			return
		}
		j.requireRunning(p, "waiting for the sink to settle")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: no 3 checkpoints in a row without a warning of the sink within %v", p, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logCount counts the log lines with message of the runs given (all of
// the job's if none are).
func (j *pgJob) logCount(message string, runs ...*proc) int {
	return len(logLines[struct{}](j.job, message, runs...))
}

// The sink's log messages the tests look for.
const (
	msgPGRecovered    = "postgres sink recovered"
	msgPGLostTxn      = "postgres sink: the database lost a transaction before its checkpoint; its rows are written again from the spool at commit"
	msgPGCommitUnsure = "postgres sink: commit failed or its outcome is unknown; deciding by the progress table"
	msgPGRewritten    = "postgres sink: wrote a checkpoint's rows again from the spool (the database had lost its transaction)"
	msgPGRetryCommit  = "postgres sink: database unreachable while committing; retrying"
	msgPGRetryStart   = "postgres sink: database unreachable at start; retrying"
)

// pgCommitLine is a sink log line about one writer's transaction.
type pgCommitLine struct {
	Writer     int    `json:"writer"`
	Checkpoint uint64 `json:"checkpoint"`
	Error      string `json:"error"`
}

// readLog returns p's stderr.
func readLog(t testing.TB, p *proc) string {
	t.Helper()
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatalf("read %s: %v", p.logPath, err)
	}
	return string(data)
}

// stderrLines returns the lines of p's stderr that are not JSON log lines
// (what the connector prints for a person, such as a config problem).
func stderrLines(t testing.TB, p *proc) []string {
	t.Helper()
	var out []string
	for line := range strings.SplitSeq(readLog(t, p), "\n") {
		if line != "" && !strings.HasPrefix(line, "{") {
			out = append(out, line)
		}
	}
	return out
}
