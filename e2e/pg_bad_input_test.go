package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/pgtest"
)

// TestPostgresConfigFaultsExitTwoNamingTheProblem: what the config names
// but the database lacks is found at start, before any record is read:
// `connector run` exits 2 (a bad config) without restarting the job, and
// its stderr names the key and the object. One case each: the table does
// not exist; a column of sink.columns does not exist; a column the sink
// would write has a type it cannot write; the role may SELECT but not
// INSERT.
func TestPostgresConfigFaultsExitTwoNamingTheProblem(t *testing.T) {
	b := cluster(t)
	for _, tc := range []struct {
		name  string
		ddl   []string
		table string
		sink  map[string]any
		role  bool     // connect as a role with only SELECT on the table
		want  []string // on stderr
	}{
		{
			name: "missing-table", ddl: []string{pgTableDDL}, table: "orders",
			want: []string{"sink.table", "table orders does not exist"},
		},
		{
			name: "missing-column", ddl: []string{pgTableDDL}, table: "t",
			sink: map[string]any{"columns": map[string]string{"id": "id", "colour": "customer"}},
			want: []string{"sink.columns", "column colour does not exist"},
		},
		{
			name: "unsupported-type", ddl: []string{`CREATE TABLE t (id bigint NOT NULL, place point)`}, table: "t",
			want: []string{"column place (point)", "type not supported"},
		},
		{
			name: "no-insert-privilege", ddl: []string{pgTableDDL}, table: "t", role: true,
			want: []string{"sink.table", "lacks INSERT on t"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var role, password string
			if tc.role {
				role, password = pgRole(t) // dropped after the database (cleanups run last first)
			}
			dsn := pgDatabase(t, tc.ddl...)
			jobDSN := dsn
			if tc.role {
				pgExec(t, dsn, "GRANT SELECT ON t TO "+pgx.Identifier{role}.Sanitize())
				jobDSN = withUser(t, dsn, role, password)
			}
			j := newPGJob(t, b, jobSpec{}, jobDSN, tc.table, tc.sink)
			produceIDs(t, b, j.topic, 0, 10, false)
			p := j.start()
			if !p.wait(time.Minute) {
				j.fatalf(p, "%s still runs a minute after its start, want exit status 2", p)
			}
			if code := p.state.ExitCode(); code != 2 {
				j.fatalf(p, "%s: %s, want exit status 2 (a bad config)", p, p.status())
			}
			j.requireNoRestart(p)
			lines := stderrLines(t, p)
			said := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(said, w) {
					j.errorf(p, "%s: stderr does not name %q: %q", p, w, lines)
				}
			}
			if !strings.Contains(said, j.cfgPath) {
				j.errorf(p, "%s: stderr does not name the config file %s: %q", p, j.cfgPath, lines)
			}
			t.Logf("%s: exit status 2 %v after its start; stderr: %s", p, p.ended.Sub(p.started).Round(time.Millisecond), said)
			if rows := pgInt(t, dsn, "SELECT count(*) FROM t"); rows != 0 {
				t.Errorf("table t has %d rows after a refused start, want none", rows)
			}
			j.requireNothingLeftOpen()
		})
	}
}

// pgRole creates a login role with a random name and password on the
// server of PG_DSN, dropped when the test ends.
func pgRole(t *testing.T) (name, password string) {
	t.Helper()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name = "e2e_reader_" + hex.EncodeToString(rnd[:])
	password = hex.EncodeToString(rnd[:]) + "-pw"
	admin := pgtest.DSN(t)
	pgExec(t, admin, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgx.Identifier{name}.Sanitize(), password))
	t.Cleanup(func() { pgExec(t, admin, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize()) })
	return name, password
}

// withUser returns the URL DSN dsn with another user and password.
func withUser(t *testing.T, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("bad DSN %s", pgDescribe(dsn))
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// TestPostgresWaitsForADatabaseUnreachableAtStart: the DSN names a port
// where nothing listens. The process stays up, /readyz says not ready, and
// the sink retries by itself (its "database unreachable at start;
// retrying" log lines), without restarting the job: restart.max_failures
// is 2 here, so a start that failed instead of waiting would end the
// process at once. Once the port answers (a proxy to the server starts
// listening there), the job starts in the same process and writes every
// id once.
func TestPostgresWaitsForADatabaseUnreachableAtStart(t *testing.T) {
	const n = 2_000
	b := cluster(t)
	dsn := pgDatabase(t, pgTableDDL)
	proxy, closed := newPGProxy(t, dsn) // not listening yet
	spec := jobSpec{Parallelism: 2, Config: map[string]map[string]any{
		"restart": {"max_failures": 2, "initial_backoff": "100ms"},
	}}
	j := newPGJob(t, b, spec, closed, "t", nil)
	produceIDs(t, b, j.topic, 0, n, false)

	p := j.start()
	why := j.waitNotReady(p, time.Minute)
	deadline := time.Now().Add(time.Minute)
	for j.logCount(msgPGRetryStart, p) < 3 {
		j.requireRunning(p, fmt.Sprintf("waiting for the sink to retry (%d %q lines so far)", j.logCount(msgPGRetryStart, p), msgPGRetryStart))
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: %d %q log lines after a minute, want 3", p, j.logCount(msgPGRetryStart, p), msgPGRetryStart)
		}
		time.Sleep(50 * time.Millisecond)
	}
	retries := logLines[pgCommitLine](j.job, msgPGRetryStart, p)
	t.Logf("%s: not ready (%s); the sink retried %d times, first: %s", p, why, len(retries), retries[0].Error)
	j.requireNoJobRestart(p)
	if j.logged(p, msgPGRecovered) {
		j.fatalf(p, "%s: the sink says it recovered while the database was unreachable", p)
	}

	proxy.open()
	took := j.waitReady(p, time.Minute)
	t.Logf("%s: ready %v after its start, once the database answered", p, took.Round(time.Millisecond))
	j.waitForRows(p, n, time.Minute)
	j.requireNoJobRestart(p)
	j.terminate(p, time.Minute)
	j.requireRowsExactlyOnce(n, 0, fmt.Sprintf("start_retries=%d", j.logCount(msgPGRetryStart, p)))
	j.requireNothingLeftOpen()
}

// TestPostgresValueThatDoesNotFitItsColumn: among ids 0..499, id 137's
// customer has 22 characters and the column is varchar(8). It is a bad
// record, handled by pipeline.on_decode_error:
//
//   - fail: the job fails (exit status 1) with an error naming the
//     column, and no row is in the table twice;
//   - skip: every other id is in the table once, id 137 is not, and
//     connector_records_skipped_total counts it;
//   - dead_letter: every other id is in the table once, and id 137 is on
//     the dead-letter topic, as produced, with the conversion error in its
//     connector.error header.
func TestPostgresValueThatDoesNotFitItsColumn(t *testing.T) {
	b := cluster(t)
	for _, policy := range []string{"fail", "skip", "dead_letter"} {
		t.Run(policy, func(t *testing.T) {
			pgBadRecord(t, b, badRecordCase{
				ddl:     `CREATE TABLE t (id bigint NOT NULL, customer varchar(8), amount numeric(10,2), ts bigint)`,
				value:   `{"id":137,"ts":1,"customer":"customer-name-too-long","amount":1.50}`,
				policy:  policy,
				wantErr: []string{"column customer (character varying(8))", "22 characters, more than the column's 8"},
			})
		})
	}
}

// TestPostgresValueTheColumnCannotHoldIsSkipped: values that the sink's
// conversion lets through but the column refuses are bad records too
// (sink/postgres: "nothing that reaches COPY fails there for its type,
// range or length"): under policy skip each is skipped and counted, every
// other id is in the table once, and the job never fails. One case each: a
// number too large for numeric(10,2); Infinity in numeric(10,2); a string
// that is not UTF-8 for a text column; a timestamp (milliseconds since the
// epoch) past PostgreSQL's range.
func TestPostgresValueTheColumnCannotHoldIsSkipped(t *testing.T) {
	b := cluster(t)
	const ddl = `CREATE TABLE t (id bigint NOT NULL, customer text, amount numeric(10,2), ts bigint, created timestamptz)`
	for _, tc := range []struct {
		name, value, column string
	}{
		{"numeric-precision", `{"id":137,"ts":1,"customer":"c","amount":123456789012.5}`, "amount"},
		{"numeric-infinity", `{"id":137,"ts":1,"customer":"c","amount":"Infinity"}`, "amount"},
		{"text-not-utf8", "{\"id\":137,\"ts\":1,\"customer\":\"c\xff\xfe\",\"amount\":1}", "customer"},
		{"timestamp-range", `{"id":137,"ts":1,"customer":"c","amount":1,"created":9000000000000000000}`, "created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pgBadRecord(t, b, badRecordCase{ddl: ddl, value: tc.value, policy: "skip", wantErr: []string{"column " + tc.column}})
		})
	}
}

// badRecordCase is one bad record among ids 0..499: id 137 with value, in
// table t made by ddl (whose other columns take recordValue's fields),
// under on_decode_error policy; wantErr is what its error must say.
type badRecordCase struct {
	ddl, value, policy string
	wantErr            []string
}

// pgBadRecord runs a bad record case; see TestPostgresValueThatDoesNotFitItsColumn.
func pgBadRecord(t *testing.T, b kafkatest.Brokers, c badRecordCase) {
	const (
		n   = 500
		bad = 137
	)
	dsn := pgDatabase(t, c.ddl)
	onError := map[string]any{"policy": c.policy}
	dlq := ""
	if c.policy == "dead_letter" {
		dlq = kafkatest.Topic(t, b, 1)
		onError["topic"] = dlq
	}
	spec := jobSpec{Parallelism: 2, Config: map[string]map[string]any{
		"pipeline": {"on_decode_error": onError},
		// One restart in process at most, then the process ends: a
		// failure shows at once.
		"restart": {"max_failures": 2, "initial_backoff": "100ms"},
	}}
	j := newPGJob(t, b, spec, dsn, "t", nil)
	produceIDs(t, b, j.topic, 0, bad, false)
	produceValues(t, b, j.topic, &kgo.Record{Key: []byte(strconv.Itoa(bad)), Value: []byte(c.value)})
	produceIDs(t, b, j.topic, bad+1, n, false)

	p := j.start()
	if c.policy == "fail" {
		j.requireFailure(p, 2*time.Minute, c.wantErr...)
		out := j.rows()
		tl := tallyOutput(out, n)
		t.Logf("after the failure the table holds %d of %d ids", n-tl.missing, n)
		if tl.duplicates+tl.unexpected > 0 || out.counts[bad] > 0 {
			t.Errorf("after the failure: %s (id %d must not be there)", tl, bad)
		}
		j.requireNothingLeftOpen()
		return
	}
	deadline := time.Now().Add(time.Minute)
	for j.present(n) < n-1 {
		j.requireRunning(p, fmt.Sprintf("waiting for every id but %d (%d of %d there)", bad, j.present(n), n-1))
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: %d of %d ids in the table after a minute", p, j.present(n), n-1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	skipped, err := p.metric(metricSkipped)
	if err != nil {
		j.fatalf(p, "%s: %v", p, err)
	}
	j.requireNoJobRestart(p)
	j.terminate(p, time.Minute)

	tl := tallyOutput(j.rows(), n)
	t.Logf("%s: table holds %d of %d ids; duplicates=%d; %s=%v", c.policy, n-tl.missing, n, tl.duplicates, metricSkipped, skipped)
	if tl.duplicates+tl.unexpected+tl.bad > 0 || tl.missing != 1 || tl.missingIDs[0] != bad {
		t.Errorf("want every id but %d once in the table: %s", bad, tl)
	}
	var why string
	switch c.policy {
	case "skip":
		if skipped != 1 {
			t.Errorf("%s = %v, want 1", metricSkipped, skipped)
		}
		if lines := logLines[errorLine](j.job, "skipping a record that cannot be processed", p); len(lines) > 0 {
			why = lines[0].Error
		}
	case "dead_letter":
		if skipped != 0 {
			t.Errorf("%s = %v, want 0 (dead-lettered, not skipped)", metricSkipped, skipped)
		}
		r := readDeadLetter(t, b, dlq, time.Minute)
		if string(r.Key) != strconv.Itoa(bad) || string(r.Value) != c.value {
			t.Errorf("dead letter %q = %s, want key %d and the value as produced, %s", r.Key, r.Value, bad, c.value)
		}
		for _, h := range r.Headers {
			if h.Key == "connector.error" {
				why = string(h.Value)
			}
		}
	}
	for _, w := range c.wantErr {
		if !strings.Contains(why, w) {
			t.Errorf("the %s record's error %q does not say %q", c.policy, why, w)
		}
	}
	t.Logf("%s of id %d: %s", c.policy, bad, why)
	j.requireNothingLeftOpen()
}

// produceValues sends records to topic and waits until each is
// acknowledged.
func produceValues(t testing.TB, b kafkatest.Brokers, topic string, rs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", len(rs), err)
	}
}

// readDeadLetter reads the first record of the dead-letter topic (one
// partition), waiting up to timeout for it.
func readDeadLetter(t *testing.T, b kafkatest.Brokers, topic string, timeout time.Duration) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatalf("consumer client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record on dead-letter topic %s within %v", topic, timeout)
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("read dead-letter topic %s: %v", topic, err)
		}
		if rs := fs.Records(); len(rs) > 0 {
			return rs[0]
		}
	}
}
