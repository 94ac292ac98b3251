// Package e2e holds the end-to-end tests: they build the connector binary,
// run it as a separate process against Apache Kafka, kill it (SIGKILL at
// random moments and at named crash points, SIGTERM), restart it, and check
// the contract of DESIGN.md from the outside: every produced id is in the
// visible output of the file sink exactly once, the group's committed offsets
// match the last checkpoint and the partition ends, and a restart resumes
// quickly.
//
// The package owns no product code; everything it knows about the connector
// is the contract (CLI, config keys, file-sink visibility, /metrics,
// /readyz, /api/checkpoints, CONNECTOR_CRASH_AT) and a few log lines.
// Helpers live in harness_test.go, process_test.go, output_test.go,
// producer_test.go and the *_helpers_test.go files; each other test file is
// one scenario.
//
// Run them against a real broker (they fail without KAFKA_BROKERS):
//
//	eval "$(scripts/kafka start)"; export KAFKA_BROKERS
//	go test -count=1 -timeout 20m -v ./e2e/
//	scripts/kafka stop
//
// The PostgreSQL sink's tests (pg_*_test.go) check its table instead of
// files, and also need PG_DSN (internal/pgtest; scripts/test starts a
// server): each makes a database of its own there. The test that restarts
// the database starts a server of its own (scripts/postgres --name e2e),
// so that no other test's connections break.
//
// Environment knobs, for developing the harness, not for CI:
//
//	E2E_KFAKE=1   use an in-process kfake broker instead of KAFKA_BROKERS
//	              (proves nothing about exactly-once)
//	E2E_RACE=1    build the connector with -race (much slower)
//	E2E_SEED=N    seed of the random kill moments, to replay a run
package e2e
