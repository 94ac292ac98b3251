package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
	_ "github.com/connector-dev/connector/internal/builtin" // the postgres sink's config
)

// TestPGConnectorConfigIsValid: the job files the bench writes for
// connector-pg and connector-pg-upsert pass the connector's own validation,
// with the postgres sink on the bench's table, the DSN from the environment.
func TestPGConnectorConfigIsValid(t *testing.T) {
	for _, mode := range []string{"insert", "upsert"} {
		s := spec{label: "connector-pg-" + mode, kind: "connector", topic: topic{Name: "bench-pg-rows-v1-100b-100000", Records: 100000, Size: 100},
			parallelism: 2, mode: "exactly_once", interval: time.Second, pg: true, pgMode: mode}
		text := connectorConfig(s, t.TempDir(), "127.0.0.1:0")
		job, err := config.Parse(mode+".yaml", []byte(text), func(k string) (string, bool) {
			switch k {
			case "KAFKA_BROKERS":
				return "127.0.0.1:9092", true
			case "BENCH_PG_DSN":
				return "postgres://u:p@127.0.0.1:5432/db", true
			}
			return "", false
		})
		if err != nil {
			t.Fatalf("%s: config does not parse: %v\n%s", mode, err, text)
		}
		if job.Sink.Type != "postgres" || !strings.Contains(text, "mode: "+mode) || !strings.Contains(text, "table: "+pgTable) {
			t.Errorf("%s: sink %q, want postgres into %s:\n%s", mode, job.Sink.Type, pgTable, text)
		}
		if strings.Contains(text, "u:p@") {
			t.Errorf("%s: the DSN is written into the job file:\n%s", mode, text)
		}
		if got := strings.Contains(text, "key: [id]"); got != (mode == "upsert") {
			t.Errorf("%s: key [id] in the config = %v", mode, got)
		}
	}
}

// TestPGCopyScriptRunsOnePsqlPerFile: pg-copy's script starts one psql per
// file with its \copy, all at once, and fails if any fails.
func TestPGCopyScriptRunsOnePsqlPerFile(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "psql")
	// The fake psql logs its last argument (the \copy) and fails for file b.
	if err := os.WriteFile(fake, []byte("#!/usr/bin/env bash\necho \"$1 ${@: -1}\" >>"+filepath.Join(dir, "calls")+"\n[[ ${@: -1} != *\"'b'\"* ]]\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(files ...string) error {
		cmd := exec.Command("bash", append([]string{"-c", pgCopyScript, "pg-copy"}, files...)...)
		cmd.Env = append(os.Environ(), "BENCH_PSQL="+fake, "BENCH_PG_DSN=dsn")
		return cmd.Run()
	}
	if err := run("a", "c"); err != nil {
		t.Fatalf("two good files: %v", err)
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	for _, f := range []string{"a", "c"} {
		want := `\copy ` + pgTable + ` (` + pgColumns + `) FROM '` + f + `'`
		if !strings.Contains(string(calls), "dsn "+want) {
			t.Errorf("no psql call with %q in:\n%s", want, calls)
		}
	}
	if err := run("a", "b"); err == nil {
		t.Error("a failing psql did not fail the script")
	}
}

// TestLogProblemsCountsWarningsByMessage: the connector log's warnings and
// errors are summarised by message; other lines are not.
func TestLogProblemsCountsWarningsByMessage(t *testing.T) {
	got := logProblems(writeLog(t, `{"level":"info","message":"checkpoint completed"}
{"level":"warn","writer":0,"message":"postgres sink: wrote a checkpoint's rows again from the spool"}
{"level":"warn","writer":1,"message":"postgres sink: wrote a checkpoint's rows again from the spool"}
{"level":"error","message":"checkpoint failed"}
`))
	want := `log: 2x "postgres sink: wrote a checkpoint's rows again from the spool"; log: 1x "checkpoint failed"`
	if got != want {
		t.Errorf("logProblems = %s, want %s", got, want)
	}
}

// TestPGCPUCountsTheProcessAndItsChildren: this test process's CPU (as a
// "postmaster") is at least its own utime+stime.
func TestPGCPUCountsTheProcessAndItsChildren(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	if got, own := pgCPU(os.Getpid()), selfCPU(); got <= 0 || got > own+time.Second {
		t.Errorf("pgCPU(self) = %v, own CPU %v", got, own)
	}
	if pgCPU(0) != 0 {
		t.Error("pgCPU(0) is not 0")
	}
}

// TestKconnectFilesNameTheRunAndTheTable: the Kafka Connect run writes into
// the bench's table with the DSN's host, database and credentials, as many
// tasks as the parallelism, under a connector name (consumer group) of its
// own run.
func TestKconnectFilesNameTheRunAndTheTable(t *testing.T) {
	s := spec{label: "kc", kind: "kconnect", pgMode: "insert", parallelism: 2,
		topic: topic{Name: "bench-pg-rows-v1-100b-100000", Records: 100000, Size: 100}}
	dir := filepath.Join(t.TempDir(), "kconnect-jdbc-x-p2-123456.789")
	files, err := kconnectFiles(s, dir, "127.0.0.1:9092", "/plugins", "postgres://u:secret@127.0.0.1:35532/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	sink, worker := files["sink.properties"], files["worker.properties"]
	for _, want := range []string{"name=bench-jdbc-kconnect-jdbc-x-p2-123456-789\n", "tasks.max=2\n",
		"topics=bench-pg-rows-v1-100b-100000\n", "connection.url=jdbc:postgresql://127.0.0.1:35532/db?reWriteBatchedInserts=true\n",
		"connection.username=u\n", "connection.password=secret\n", "insert.mode=insert\n", "table.name.format=" + pgTable + "\n",
		"transforms.row.type=dev.connector.bench.RowStruct\n"} {
		if !strings.Contains(sink, want) {
			t.Errorf("sink.properties lacks %q:\n%s", want, sink)
		}
	}
	for _, want := range []string{"bootstrap.servers=127.0.0.1:9092\n", "plugin.path=/plugins\n",
		"offset.storage.file.filename=" + filepath.Join(dir, "data", "offsets") + "\n", "value.converter.schemas.enable=false\n"} {
		if !strings.Contains(worker, want) {
			t.Errorf("worker.properties lacks %q:\n%s", want, worker)
		}
	}
	if _, err := kconnectFiles(s, dir, "b", "/p", "not a url"); err == nil {
		t.Error("a DSN that is no URL was taken")
	}
}

// TestKconnectProblemsCountsErrorsByText: a Kafka Connect log's ERROR and
// WARN lines are counted by their text up to the first digit.
func TestKconnectProblemsCountsErrorsByText(t *testing.T) {
	got := kconnectProblems(writeLog(t, `[2026-11-30 23:31:01,417] WARN Using deprecated config option "table.name.format". (io.debezium.config.Field)
[2026-11-30 23:31:02,000] INFO started (x)
[2026-11-30 23:31:03,000] ERROR WorkerSinkTask{id=bench-jdbc-0} Task threw an uncaught exception (y)
[2026-11-30 23:31:04,000] ERROR WorkerSinkTask{id=bench-jdbc-1} Task threw an uncaught exception (y)
`))
	want := `log: 2x "ERROR WorkerSinkTask{id=bench-jdbc-"`
	if got != want {
		t.Errorf("kconnectProblems = %s, want %s", got, want)
	}
}
