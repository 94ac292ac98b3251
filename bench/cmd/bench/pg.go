package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kafka to PostgreSQL (issue 13): the contenders put the rows of a topic of
// the rows layout (bench/cmd/load --layout rows: id, u, h, ts, pad) into a
// table with five typed columns, made fresh for each run:
//
//   - pg-copy, the ceiling: psql's \copy of the same rows from COPY text
//     files written beforehand (not timed), one psql per file, as many as
//     the parallelism, each file in one transaction;
//   - connector-pg: the connector's postgres sink, mode insert, exactly-once
//     checkpoints every second;
//   - connector-pg-upsert: the same with mode upsert, key [id];
//   - kconnect-jdbc, a reference: Kafka Connect (a standalone worker of the
//     Kafka release the bench runs against) with Debezium's JDBC sink
//     connector, insert mode, as many tasks as the parallelism, at least
//     once (Kafka Connect commits the consumer offsets after the rows, so
//     a crash writes some rows again: with a primary key the task fails on
//     them). Confluent's JDBC sink, the usual reference, is not on Maven
//     Central; Debezium's is. A JDBC sink needs a value with a schema, and
//     the rows topic is schemaless JSON: bench/kconnect/RowStruct.java, a
//     transform, gives each value the table's schema.
//
// A drain ends when every row is visible: for the connector, once it has
// written every record (for Kafka Connect, which has no such metric, from
// its first row on), the bench asks the table for the last record of
// each partition (an index lookup); for Kafka Connect the count of the
// whole table then confirms it (its tasks' batches mix partitions). Each partition's records all go to one
// worker (the load's keys hash to worker i mod P for P = 1, 2, 4; records
// of partition p share i mod 8), whose transactions commit in order: its
// last record visible, all of it is. psql: when every psql has exited.
// The table is then read whole: every id 0..N-1 exactly once, with the
// values the load gave it.
//
// The database's CPU is that of the PostgreSQL instance's processes: the
// postmaster's (with its reaped children's: backends that exited) and its
// live children's, from /proc.

// pgPrefix starts the name of every topic the PostgreSQL experiments make.
const pgPrefix = "bench-pg"

// pgNames are the PostgreSQL experiments, in the order they take turns.
// They run only when --only names them (they need a PostgreSQL server).
var pgNames = []string{"pg-copy", "connector-pg", "connector-pg-upsert", "kconnect-jdbc"}

// pgTable is the table every run writes; dropped and created before each.
const pgTable = "bench_rows"

// pgDDL makes the table: five typed columns, a primary key (upsert needs
// one; the others write into the same kind of table).
const pgDDL = `CREATE TABLE ` + pgTable + ` (id bigint PRIMARY KEY, u bigint NOT NULL, h bigint NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL)`

// pgColumns are the table's columns, in the COPY files' order.
const pgColumns = "id, u, h, ts, pad"

// pgState is the bench's connection to the PostgreSQL server.
type pgState struct {
	pgConn *pgx.Conn
}

// pg returns the bench's connection, made on first use.
func (b *bench) pg() (*pgx.Conn, error) {
	if b.pgConn != nil && !b.pgConn.IsClosed() {
		return b.pgConn, nil
	}
	if b.o.pgDSN == "" {
		return nil, fmt.Errorf("the PostgreSQL experiments need --pg-dsn (bench/run starts scripts/postgres --name bench)")
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.o.pgDSN)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	b.pgConn = conn
	return conn, nil
}

func (b *bench) pgExec(timeout time.Duration, sql string, args ...any) error {
	conn, err := b.pg()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// runPG runs the PostgreSQL experiments: for each of --pg-records, a topic
// of the rows layout (and, for pg-copy, the same rows as COPY files), the
// contenders taking turns; then it deletes the topics and the files.
func (b *bench) runPG() error {
	o := &b.o
	var names []string
	for _, n := range pgNames {
		if o.only[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if _, err := b.pg(); err != nil {
		return err
	}
	if o.pgPID <= 0 {
		b.log("no --pg-pid: the database's CPU is not measured (and counts as other processes')")
	}
	labels := map[string]string{
		"pg-copy":             fmt.Sprintf("psql \\copy from files (%d sessions)", o.parallelism),
		"connector-pg":        "connector insert, exactly-once 1s",
		"connector-pg-upsert": "connector upsert (key id), exactly-once 1s",
		"kconnect-jdbc":       "Kafka Connect + Debezium JDBC sink (insert), at-least-once",
	}
	var topics []string
	defer func() {
		if !o.keep && len(topics) > 0 {
			b.deleteTopics(topics...)
		}
		if !o.keep {
			_ = b.pgExec(time.Minute, "DROP TABLE IF EXISTS "+pgTable)
		}
	}()
	for _, n := range o.pgRecords {
		t, err := b.loadLayout(n, 100, pgPrefix, "rows")
		if err != nil {
			return err
		}
		topics = append(topics, t.Name)
		var files []string
		if contains(names, "pg-copy") {
			if files, err = b.copyFiles(t); err != nil {
				return err
			}
		}
		section := fmt.Sprintf("pg drain %s rows x %d B", human(float64(t.Records)), t.Size)
		var specs []spec
		for _, name := range names {
			s := spec{section: section, name: name, label: labels[name], topic: t, parallelism: o.parallelism,
				interval: time.Second, mode: "exactly_once", pg: true, copyFiles: files}
			switch name {
			case "pg-copy":
				s.kind = "pgcopy"
			case "connector-pg":
				s.kind, s.pgMode = "connector", "insert"
			case "connector-pg-upsert":
				s.kind, s.pgMode = "connector", "upsert"
			case "kconnect-jdbc":
				s.kind, s.pgMode = "kconnect", "insert"
			}
			specs = append(specs, s)
		}
		for _, r := range b.rounds(specs, b.steadyDrain) {
			b.record(r)
		}
		if !o.keep {
			for _, f := range files {
				_ = os.Remove(f)
			}
		}
	}
	return nil
}

// copyFiles writes the rows of t as COPY text files, one per psql session
// (row i in file i mod parallelism, as the connector's workers get them).
func (b *bench) copyFiles(t topic) ([]string, error) {
	dir := filepath.Join(b.o.work, "pg-copy-files")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	P := b.o.parallelism
	base := filepath.Join(dir, fmt.Sprintf("%s-p%d", t.Name, P))
	b.log("writing the rows of %s into %d COPY files (not timed)", t.Name, P)
	cmd := exec.CommandContext(b.ctx, filepath.Join(b.o.bin, "load"), "--layout", "rows", "--records", strconv.FormatInt(t.Records, 10),
		"--size", strconv.Itoa(t.Size), "--copy-file", base, "--parts", strconv.Itoa(P))
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("write the COPY files: %w", err)
	}
	var files []string
	for k := range P {
		files = append(files, fmt.Sprintf("%s-%d.tsv", base, k))
	}
	return files, nil
}

// pgPrepare makes the run's table anew (and drops the connector's progress
// table), then has the server write its dirty buffers out (CHECKPOINT), so
// that no run pays for the one before it.
func (b *bench) pgPrepare() error {
	for _, sql := range []string{
		"DROP TABLE IF EXISTS " + pgTable,
		"DROP TABLE IF EXISTS connector_progress",
		pgDDL,
		"CHECKPOINT",
	} {
		if err := b.pgExec(5*time.Minute, sql); err != nil {
			return fmt.Errorf("prepare the table (%s): %w", sql, err)
		}
	}
	return nil
}

// pgDrain runs one PostgreSQL contender from an empty table until every
// row is visible, then verifies the table.
func (b *bench) pgDrain(s spec) *result {
	dir, r, ok := b.beginWith(s, b.pgPrepare)
	if !ok {
		return r
	}
	busy0, broker0, db0 := cpuBusy(), pidCPU(b.o.brokerPID), pgCPU(b.o.pgPID)
	p, addr, err := b.launch(s, dir, false, "contender.log")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.kill()
	N := s.topic.Records
	deadline := time.Now().Add(b.timeout(s.topic))

	if s.kind == "pgcopy" {
		select {
		case <-p.exited:
		case <-b.ctx.Done():
			r.Err = "interrupted"
			return r
		case <-time.After(b.timeout(s.topic)):
			r.Err = fmt.Sprintf("psql did not finish within %s", b.timeout(s.topic))
			return r
		}
		end, busyEnd, brokerEnd, dbEnd := time.Now(), cpuBusy(), pidCPU(b.o.brokerPID), pgCPU(b.o.pgPID)
		if p.err != nil {
			r.Err = fmt.Sprintf("psql: %v; see %s", p.err, filepath.Join(dir, "contender.log"))
			return r
		}
		b.measure(r, p, s, p.started, end, usage{}, p.rusage(), busy0, broker0, busyEnd, brokerEnd)
		b.pgMeasure(r, db0, dbEnd)
		b.pgVerify(r, s)
		return r
	}

	var (
		first, written, end             time.Time
		cpuFirst, final                 usage
		busyFirst, brokerFirst, dbFirst time.Duration
		tailIDs                         int64 // rows of the partitions' last records
		byCount                         bool  // the tail check does not apply: count every row
	)
	gate := scrapeGate{total: N}
	partitions := int64(8)
	tailIDs = min(partitions, N)
	if P := s.parallelism; P != 1 && P != 2 && P != 4 {
		byCount = true
	}
	for {
		if b.ctx.Err() != nil {
			r.Err = "interrupted"
			return r
		}
		if time.Now().After(deadline) {
			r.Err = fmt.Sprintf("not drained after %s", b.timeout(s.topic))
			return r
		}
		if !p.alive() {
			r.Err = fmt.Sprintf("exited (%v) before every row was committed; see %s", p.err, filepath.Join(dir, "contender.log"))
			return r
		}
		if s.kind == "kconnect" && written.IsZero() {
			// No records-out metric: the drain starts at the first row
			// visible, and the tail check runs from then on.
			if has, err := b.pgAny(); err == nil && has {
				first, written = time.Now(), time.Now()
				cpuFirst, _ = p.sample()
				busyFirst, brokerFirst, dbFirst = cpuBusy(), pidCPU(b.o.brokerPID), pgCPU(b.o.pgPID)
			}
		} else if written.IsZero() {
			if m, out, ok := gate.scrape(addr); ok {
				now := time.Now()
				if first.IsZero() && out > 0 {
					first = now
					cpuFirst, _ = p.sample()
					busyFirst, brokerFirst, dbFirst = cpuBusy(), pidCPU(b.o.brokerPID), pgCPU(b.o.pgPID)
				}
				if out >= N {
					written = now
					r.Metrics = m
				}
			}
		}
		if !written.IsZero() {
			done, err := b.pgVisible(N, tailIDs, byCount)
			if err == nil && done && s.kind == "kconnect" && !byCount {
				byCount = true // confirm with the count of every row
				done, err = b.pgVisible(N, tailIDs, true)
			}
			if err != nil {
				b.log("%s: %v", s.label, err)
			} else if done {
				end = time.Now()
				final, _ = p.sample()
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	busyEnd, brokerEnd, dbEnd := cpuBusy(), pidCPU(b.o.brokerPID), pgCPU(b.o.pgPID)
	if first.IsZero() {
		first = written
	}
	r.Written = written.Sub(first).Seconds()
	if r.Written > 0 && s.kind == "connector" {
		r.WrittenPerS = float64(N) / r.Written
	}
	if busyFirst == 0 {
		busyFirst, brokerFirst, dbFirst = busy0, broker0, db0
	}
	b.measure(r, p, s, first, end, cpuFirst, final, busyFirst, brokerFirst, busyEnd, brokerEnd)
	b.pgMeasure(r, dbFirst, dbEnd)
	if s.kind == "connector" {
		if m, err := scrape(addr); err == nil {
			r.Metrics = m
		}
	}
	// The checkpoints counted are those completed before SIGTERM (not its
	// final one): the one that made the last rows visible logs its
	// completion after the commit, so a few ms after the poll that saw
	// them, at times.
	stopped := time.Now()
	if !p.stop(60 * time.Second) {
		b.log("%s did not stop within 60s after SIGTERM; killed", s.label)
	}
	if s.kind == "connector" {
		b.checkpointStats(r, connectorCheckpoints(filepath.Join(dir, "contender.log")), stopped)
		r.Note = strings.TrimSpace(r.Note + " " + logProblems(filepath.Join(dir, "contender.log")))
	} else {
		r.Note = strings.TrimSpace(r.Note + " " + kconnectProblems(filepath.Join(dir, "contender.log")))
	}
	b.pgVerify(r, s)
	if !b.o.keep {
		_ = os.RemoveAll(filepath.Join(dir, "data"))
	}
	return r
}

// pgVisible reports whether every row of the run is visible: the last
// record of each partition (ids N-tail..N-1), or with byCount every row.
func (b *bench) pgVisible(n, tail int64, byCount bool) (bool, error) {
	conn, err := b.pg()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	var got int64
	if byCount {
		err = conn.QueryRow(ctx, "SELECT count(*) FROM "+pgTable).Scan(&got)
		return got >= n, err
	}
	err = conn.QueryRow(ctx, "SELECT count(*) FROM "+pgTable+" WHERE id >= $1", n-tail).Scan(&got)
	return got >= tail, err
}

// pgAny reports whether the table holds a row.
func (b *bench) pgAny() (bool, error) {
	conn, err := b.pg()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	var has bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgTable+")").Scan(&has)
	return has, err
}

// pgMeasure adds the database's CPU during the drain, which measure
// counted as other processes'.
func (b *bench) pgMeasure(r *result, dbFirst, dbEnd time.Duration) {
	if b.o.pgPID <= 0 {
		return
	}
	r.DBCPU = (dbEnd - dbFirst).Seconds()
	r.DBCPUPerM = r.DBCPU / (float64(r.Topic.Records) / 1e6)
	r.OtherCPU = max(0, r.OtherCPU-r.DBCPU)
}

// pgVerify reads the whole table: every id 0..N-1 once, each row with the
// values the load gave it (u, h, ts, the pad's first letter).
func (b *bench) pgVerify(r *result, s spec) {
	conn, err := b.pg()
	if err != nil {
		r.Verified = "verification failed: " + err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Minute)
	defer cancel()
	N := s.topic.Records
	var v verification
	var outside, wrong int64
	err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id),
		count(*) FILTER (WHERE id < 0 OR id >= $1),
		count(*) FILTER (WHERE u <> id % 1000000 OR h <> id % 100000
			OR ts <> timestamptz '2026-01-01 00:00:00+00' + id * interval '1 millisecond'
			OR left(pad, 1) <> chr(97 + (id % 26)::int))
		FROM `+pgTable, N).Scan(&v.Lines, &v.Distinct, &outside, &wrong)
	if err != nil {
		r.Verified = "verification failed: " + err.Error()
		return
	}
	v.Duplicates = v.Lines - v.Distinct
	v.Malformed = wrong
	v.Distinct -= outside // ids outside 0..N-1 are no record of the load
	v.Malformed += outside
	v.Missing = N - v.Distinct
	r.Check = &v
	switch {
	case v.ExactlyOnce(N):
		r.Verified = "every id once"
		if s.pgMode == "upsert" {
			r.Verified = "every id once (one row per key)"
		}
	default:
		r.Verified = fmt.Sprintf("%d rows, %d distinct ids, %d duplicates, %d missing, %d wrong or outside 0..N-1",
			v.Lines, v.Distinct, v.Duplicates, v.Missing, v.Malformed)
	}
}

// logProblems summarises the warnings and errors of a connector's log (the
// sink's rewrites from the spool, failed checkpoints), "" if none.
func logProblems(path string) string {
	return tallyLog(path, func(line []byte) string {
		if !bytes.Contains(line, []byte(`"level":"warn"`)) && !bytes.Contains(line, []byte(`"level":"error"`)) {
			return ""
		}
		msg := string(line)
		if i := bytes.Index(line, []byte(`"message":"`)); i >= 0 {
			msg = string(line[i+len(`"message":"`):])
			if j := strings.IndexByte(msg, '"'); j >= 0 {
				msg = msg[:j]
			}
		}
		return msg
	})
}

// tallyLog counts the messages problem picks out of the lines of the log at
// path ("" for a line that is none), in order of first appearance:
// "log: 3x \"...\"; ...", or "" if none (or no log).
func tallyLog(path string, problem func(line []byte) string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		msg := problem(line)
		if msg == "" {
			continue
		}
		if counts[msg] == 0 {
			order = append(order, msg)
		}
		counts[msg]++
	}
	var out []string
	for _, m := range order {
		out = append(out, fmt.Sprintf("log: %dx %q", counts[m], m))
	}
	return strings.Join(out, "; ")
}

// pgCPU is the CPU time of a PostgreSQL instance: its postmaster's own and
// that of its children it reaped (backends that exited), and its live
// children's (backends, checkpointer, WAL writer, autovacuum...). 0 if the
// pid is unknown.
func pgCPU(postmaster int) time.Duration {
	if postmaster <= 0 {
		return 0
	}
	ticks := statTicks(postmaster, true)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		if ppid, ok := statPPID(pid); ok && ppid == postmaster {
			ticks += statTicks(pid, true)
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// statFields returns the fields of /proc/<pid>/stat after the command name
// (f[0] is field 3, the state).
func statFields(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

func statPPID(pid int) (int, bool) {
	f := statFields(pid)
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// statTicks is utime+stime of pid, with children also cutime+cstime.
func statTicks(pid int, children bool) int64 {
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	idx := []int{11, 12}
	if children {
		idx = append(idx, 13, 14)
	}
	var ticks int64
	for _, k := range idx {
		v, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += v
	}
	return ticks
}

// pgSinkConfig is the connector's sink section for a PostgreSQL run; the
// DSN comes from the environment (BENCH_PG_DSN), not the file.
func pgSinkConfig(s spec, dir string) string {
	c := fmt.Sprintf("type: postgres\n  dsn: \"${BENCH_PG_DSN}\"\n  table: %s\n  mode: %s\n  spool_dir: %s",
		pgTable, s.pgMode, filepath.Join(dir, "data", "spool"))
	if s.pgMode == "upsert" {
		c += "\n  key: [id]"
	}
	return c
}

// pgCopyScript is the bash script of pg-copy, run with the COPY files as
// its arguments and BENCH_PSQL, BENCH_PG_DSN in its environment: one psql
// \copy per file, all at once, each file in one transaction (psql runs a
// single command in autocommit mode); it fails if any fails.
const pgCopyScript = `pids=()
for f in "$@"; do
  "$BENCH_PSQL" "$BENCH_PG_DSN" -X -q -v ON_ERROR_STOP=1 -c "\copy ` + pgTable + ` (` + pgColumns + `) FROM '$f'" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
`

// kconnectFiles are the files of a Kafka Connect run in dir: the standalone
// worker's properties, the sink connector's and log4j2's. The connector's
// name (and so its consumer group, connect-<name>) is the run dir's: no run
// resumes another's offsets.
func kconnectFiles(s spec, dir, brokers, plugins, dsn string) (map[string]string, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("kconnect-jdbc: the DSN is no URL: %v", err)
	}
	pass, _ := u.User.Password()
	name := "bench-jdbc-" + strings.ReplaceAll(filepath.Base(dir), ".", "-")
	worker := fmt.Sprintf(`# written by bench/cmd/bench for %q
bootstrap.servers=%s
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
offset.storage.file.filename=%s
offset.flush.interval.ms=1000
plugin.path=%s
listeners=http://127.0.0.1:0
consumer.auto.offset.reset=earliest
consumer.max.poll.records=%d
`, s.label, brokers, filepath.Join(dir, "data", "offsets"), plugins, kconnectBatch)
	sink := fmt.Sprintf(`# written by bench/cmd/bench for %q
name=%s
connector.class=io.debezium.connector.jdbc.JdbcSinkConnector
tasks.max=%d
topics=%s
connection.url=jdbc:postgresql://%s%s?reWriteBatchedInserts=true
connection.username=%s
connection.password=%s
insert.mode=%s
primary.key.mode=none
schema.evolution=none
table.name.format=%s
batch.size=%d
transforms=row
transforms.row.type=dev.connector.bench.RowStruct
`, s.label, name, s.parallelism, s.topic.Name, u.Host, u.Path, u.User.Username(), pass, s.pgMode, pgTable, kconnectBatch)
	log4j := `rootLogger.level=INFO
rootLogger.appenderRef.stdout.ref=STDOUT
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=org.apache.kafka
logger.kafka.level=WARN
`
	return map[string]string{"worker.properties": worker, "sink.properties": sink, "log4j2.properties": log4j}, nil
}

// kconnectBatch is the Kafka Connect consumer's max.poll.records and the
// JDBC sink's batch.size (defaults 500 both): the rows of a batch go in
// one multi-row INSERT (reWriteBatchedInserts) and one transaction.
const kconnectBatch = 5000

// kconnectProblems summarises the ERROR and WARN lines of a Kafka Connect
// log (by their text up to the first digit: ids and offsets vary), "" if
// none.
func kconnectProblems(path string) string {
	return tallyLog(path, func(line []byte) string {
		var msg string
		for _, level := range []string{"] ERROR ", "] WARN "} {
			if i := bytes.Index(line, []byte(level)); i >= 0 {
				msg = strings.TrimSpace(string(line[i+2:]))
			}
		}
		if msg == "" || strings.Contains(msg, "deprecated config") || strings.Contains(msg, "ServiceLoader manifests") {
			return ""
		}
		if i := strings.IndexAny(msg, "0123456789"); i > 0 {
			msg = msg[:i]
		}
		return msg[:min(len(msg), 120)]
	})
}
