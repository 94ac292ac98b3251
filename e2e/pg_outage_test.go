package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPostgresRestartMidRunLosesNothingAndNeedsNoRestart: the database is
// restarted twice (pg_ctl restart -m fast) under a running job while ids
// keep coming, each time once the sink has settled from the last one.
// Every connection of the job breaks, with the transactions open on them;
// the job goes on in the same process without restarting
// (connector_job_restarts_total stays 0, no in-process restart logged),
// writes what the database lost again from its spool, and in the end the
// table holds every id once. The server is one of the test's own
// (scripts/postgres --name e2e), so that restarting it breaks no other
// test's connections.
func TestPostgresRestartMidRunLosesNothingAndNeedsNoRestart(t *testing.T) {
	b := cluster(t)
	srv := startOwnPGServer(t)
	pgExec(t, srv.dsn, pgTableDDL)
	j := newPGJob(t, b, jobSpec{Parallelism: 4, Partitions: 4}, srv.dsn, "t", nil)
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})

	p := j.start()
	j.waitReady(p, time.Minute)
	for i := range 2 {
		// Rows keep being committed before each restart, and after it:
		// the job really recovered, it is not merely alive.
		before := pgInt(t, srv.dsn, "SELECT count(*) FROM t")
		j.waitForRowCount(p, int(before)+1_000, time.Minute)
		j.waitSettled(p, time.Minute)
		before = pgInt(t, srv.dsn, "SELECT count(*) FROM t")
		srv.restart()
		after := pgInt(t, srv.dsn, "SELECT count(*) FROM t")
		j.waitForRowCount(p, int(after)+1_000, time.Minute)
		t.Logf("restart %d: %d rows before, %d right after, committing again", i+1, before, after)
	}
	n := prod.stop(t, time.Minute)
	j.waitForRows(p, n, 2*time.Minute)
	j.requireNoJobRestart(p)
	// The restarts took open transactions from the job, which it wrote
	// again: else they did not hit what this test is about.
	if c := j.logCount(msgPGRewritten, p); c == 0 {
		j.errorf(p, "%s: no transaction written again from the spool: the restarts broke no open transaction", p)
	} else {
		t.Logf("%s: %d transactions written again from the spool, %d commits retried while the database was down, %d transactions lost before their checkpoint",
			p, c, j.logCount(msgPGRetryCommit, p), j.logCount(msgPGLostTxn, p))
	}
	j.terminate(p, time.Minute)
	if len(j.runs) != 1 {
		t.Fatalf("harness: %d runs, want the one", len(j.runs))
	}
	j.requireRowsExactlyOnce(n, 0, "database_restarts=2")
	j.requireNothingLeftOpen()
}

// TestPostgresTerminatedSessionsLoseNothingAndNeedNoRestart: while ids
// keep coming, every session of the job is ended with
// pg_terminate_backend three times, each once the sink has settled from
// the last; then once more while one of them is inside COMMIT: a deferred
// constraint trigger on the progress table holds every COMMIT of the job
// on an advisory lock the test holds, and the session waiting there is
// terminated. The job goes on in the same process without restarting,
// writes again what the killed sessions held (the one killed in COMMIT is
// decided by the progress table: not committed, so written again), and the
// table holds every id once.
func TestPostgresTerminatedSessionsLoseNothingAndNeedNoRestart(t *testing.T) {
	b := cluster(t)
	dsn := pgDatabase(t, pgTableDDL)
	j := newPGJob(t, b, jobSpec{Parallelism: 4, Partitions: 4}, dsn, "t", nil)
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})

	p := j.start()
	j.waitReady(p, time.Minute)
	ended := 0
	for range 3 {
		j.waitForRowCount(p, int(pgInt(t, dsn, "SELECT count(*) FROM t"))+500, time.Minute)
		j.waitSettled(p, time.Minute)
		c := j.terminateJobSessions()
		if c == 0 {
			j.fatalf(p, "%s: pg_terminate_backend found no session of the job", p)
		}
		ended += c
	}
	t.Logf("ended %d sessions of the job in 3 rounds", ended)

	// A COMMIT held on an advisory lock, and its session terminated there.
	j.waitForRowCount(p, int(pgInt(t, dsn, "SELECT count(*) FROM t"))+500, time.Minute)
	j.waitSettled(p, time.Minute)
	failedBefore := len(j.failedCommits(p))
	pgExec(t, dsn, `CREATE FUNCTION e2e_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NULL; END $$`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock(4242)"); err != nil {
		t.Fatalf("take the advisory lock: %v", err)
	}
	pgExec(t, dsn, `CREATE CONSTRAINT TRIGGER e2e_hold_commit AFTER INSERT OR UPDATE ON connector_progress
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION e2e_hold_commit()`)
	pid := j.waitOnAdvisoryLock(p, "COMMIT", time.Minute)
	if !pgTerminate(t, dsn, pid) {
		t.Fatalf("pg_terminate_backend(%d) of the session waiting in COMMIT: false", pid)
	}
	t.Logf("terminated session %d of the job while it waited inside COMMIT", pid)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock(4242)"); err != nil {
		t.Fatalf("release the advisory lock: %v", err)
	}
	holder.Close(ctx)
	pgExec(t, dsn, "DROP TRIGGER e2e_hold_commit ON connector_progress")
	j.waitForRowCount(p, int(pgInt(t, dsn, "SELECT count(*) FROM t"))+500, time.Minute)
	// The commit killed in COMMIT failed, and its rows were written again
	// (the progress row said: not committed).
	if failed := j.failedCommits(p); len(failed) == failedBefore {
		j.errorf(p, "%s: no commit failed after its session was terminated inside COMMIT", p)
	} else {
		f := failed[failedBefore]
		if !slices.ContainsFunc(logLines[pgCommitLine](j.job, msgPGRewritten, p), func(l pgCommitLine) bool {
			return l.Writer == f.Writer && l.Checkpoint == f.Checkpoint
		}) {
			j.errorf(p, "%s: writer %d's transaction of checkpoint %d was killed in COMMIT and never written again", p, f.Writer, f.Checkpoint)
		}
		t.Logf("%s: the commit killed was writer %d's of checkpoint %d (%s); written again from the spool", p, f.Writer, f.Checkpoint, f.Error)
	}

	n := prod.stop(t, time.Minute)
	j.waitForRows(p, n, 2*time.Minute)
	j.requireNoJobRestart(p)
	t.Logf("%s: %d transactions written again from the spool, %d commits decided by the progress table", p,
		j.logCount(msgPGRewritten, p), j.logCount(msgPGCommitUnsure, p))
	j.terminate(p, time.Minute)
	j.requireRowsExactlyOnce(n, 0, fmt.Sprintf("sessions_terminated=%d", ended+1))
	j.requireNothingLeftOpen()
}

// TestPostgresSessionKilledWhileAWriteAgainMarksItsProgressNeedsNoRestart:
// the progress update of a commit is held on an advisory lock the test
// holds (a plain AFTER UPDATE trigger on the progress table), and the
// session waiting there is terminated: first a writer's own commit, which
// the sink then writes again from the spool on its own connection; then
// that write again, held at its progress update in turn. A killed
// connection is a database the sink cannot reach for a moment: it must try
// again, as it does when the kill lands anywhere else, and not fail the
// commit (which restarts the job in process). The table holds every id
// once either way.
func TestPostgresSessionKilledWhileAWriteAgainMarksItsProgressNeedsNoRestart(t *testing.T) {
	b := cluster(t)
	dsn := pgDatabase(t, pgTableDDL)
	j := newPGJob(t, b, jobSpec{Parallelism: 1, Partitions: 2}, dsn, "t", nil)
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 1_000})

	p := j.start()
	j.waitReady(p, time.Minute)
	j.waitForRowCount(p, 500, time.Minute)
	j.waitSettled(p, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock(4243)"); err != nil {
		t.Fatalf("take the advisory lock: %v", err)
	}
	pgExec(t, dsn, `CREATE FUNCTION e2e_hold_progress() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock_shared(4243); RETURN NULL; END $$`)
	pgExec(t, dsn, `CREATE TRIGGER e2e_hold_progress AFTER INSERT OR UPDATE ON connector_progress
		FOR EACH ROW EXECUTE FUNCTION e2e_hold_progress()`)
	// The writer's commit, held at its progress update.
	pid := j.waitOnAdvisoryLock(p, "INSERT INTO", time.Minute)
	if !pgTerminate(t, dsn, pid) {
		t.Fatalf("pg_terminate_backend(%d): false", pid)
	}
	t.Logf("terminated session %d of the job while its commit updated the progress row", pid)
	// The same rows written again from the spool, held there in turn.
	again := j.waitOnAdvisoryLock(p, "INSERT INTO", time.Minute)
	if again == pid {
		t.Fatalf("harness: session %d still waits after its termination", pid)
	}
	if !pgTerminate(t, dsn, again) {
		t.Fatalf("pg_terminate_backend(%d): false", again)
	}
	t.Logf("terminated session %d of the job while it wrote the rows again and updated the progress row", again)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock(4243)"); err != nil {
		t.Fatalf("release the advisory lock: %v", err)
	}
	holder.Close(ctx)
	pgExec(t, dsn, "DROP TRIGGER e2e_hold_progress ON connector_progress")

	n := prod.stop(t, time.Minute)
	j.waitForRows(p, n, 2*time.Minute)
	j.requireNoJobRestart(p)
	j.terminate(p, time.Minute)
	j.requireRowsExactlyOnce(n, 0, "sessions_terminated=2")
	j.requireNothingLeftOpen()
}

// failedCommits returns p's log lines saying that a commit failed: its
// outcome unknown (the writer's own transaction) or the database
// unreachable (a transaction being written again), in order.
func (j *pgJob) failedCommits(p *proc) []pgCommitLine {
	var out []pgCommitLine
	for line := range strings.SplitSeq(readLog(j.t, p), "\n") {
		if strings.Contains(line, `"message":"`+msgPGCommitUnsure+`"`) || strings.Contains(line, `"message":"`+msgPGRetryCommit+`"`) {
			var l pgCommitLine
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				j.t.Fatalf("%s: %v: %s", p.logPath, err, line)
			}
			out = append(out, l)
		}
	}
	return out
}

// waitOnAdvisoryLock waits until a session of the job waits for an
// advisory lock inside a statement that starts with query, and returns its
// pid.
func (j *pgJob) waitOnAdvisoryLock(p *proc, query string, timeout time.Duration) int64 {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pid := pgInt(j.t, j.dsn, `SELECT max(pid) FROM pg_stat_activity WHERE datname = current_database()
			AND application_name LIKE 'connector %' AND starts_with(query, $1) AND wait_event_type = 'Lock' AND wait_event = 'advisory'`, query)
		if pid != 0 {
			return pid
		}
		j.requireRunning(p, "waiting for a statement held on the advisory lock")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: no session of the job waits in %q on the advisory lock after %v; its sessions: %v", p, query, timeout, j.sessionsOfJob())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pgTerminate ends session pid; false if there was none.
func pgTerminate(t testing.TB, dsn string, pid int64) bool {
	t.Helper()
	var ok bool
	pgQuery(t, dsn, "pg_terminate_backend", func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok)
	})
	return ok
}

// TestPostgresCommitWhoseReplyIsLostIsDecidedByTheProgressRow: the job
// reaches the database through a proxy that forwards one COMMIT of the job
// to the server and drops the reply, closing the connection: the
// transaction committed, and the connector only saw its connection fail.
// It must decide by the progress row that the transaction committed (and
// not write its rows again): the log says the commit's outcome was
// unknown, no transaction of that writer and checkpoint is written again,
// the job never restarts, and the table holds every id once.
func TestPostgresCommitWhoseReplyIsLostIsDecidedByTheProgressRow(t *testing.T) {
	b := cluster(t)
	dsn := pgDatabase(t, pgTableDDL)
	proxy, viaProxy := newPGProxy(t, dsn)
	proxy.open()
	j := newPGJob(t, b, jobSpec{Parallelism: 2, Partitions: 4}, viaProxy, "t", nil)
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 2_000})

	p := j.start()
	j.waitReady(p, time.Minute)
	j.waitForRowCount(p, 1_000, time.Minute)
	proxy.loseNextCommitReply()
	tag, ok := proxy.waitLost(time.Minute)
	if !ok {
		j.fatalf(p, "%s: no COMMIT went through the proxy within a minute", p)
	}
	if tag != "COMMIT" {
		j.fatalf(p, "%s: the COMMIT whose reply the proxy dropped ended with %q, want COMMIT (committed)", p, tag)
	}
	t.Logf("the server committed a transaction of the job; the proxy dropped the reply and closed the connection")
	j.waitForRowCount(p, int(pgInt(t, dsn, "SELECT count(*) FROM t"))+1_000, time.Minute)

	n := prod.stop(t, time.Minute)
	j.waitForRows(p, n, 2*time.Minute)
	j.requireNoJobRestart(p)
	unsure := logLines[pgCommitLine](j.job, msgPGCommitUnsure, p)
	if len(unsure) != 1 {
		j.fatalf(p, "%s: %d %q log lines, want 1 (for the COMMIT whose reply was lost)", p, len(unsure), msgPGCommitUnsure)
	}
	u := unsure[0]
	t.Logf("%s: writer %d, checkpoint %d: %s (%s)", p, u.Writer, u.Checkpoint, msgPGCommitUnsure, u.Error)
	if slices.ContainsFunc(logLines[pgCommitLine](j.job, msgPGRewritten, p), func(l pgCommitLine) bool {
		return l.Writer == u.Writer && l.Checkpoint == u.Checkpoint
	}) {
		j.errorf(p, "%s: writer %d's transaction of checkpoint %d committed, yet was written again from the spool", p, u.Writer, u.Checkpoint)
	}
	j.terminate(p, time.Minute)
	j.requireRowsExactlyOnce(n, 0, "commit_replies_lost=1")
	j.requireNothingLeftOpen()
}
