// Package e2e holds the end-to-end tests: they build the connector binary,
// run it as a separate process against Apache Kafka, kill it (SIGKILL at
// random moments and at named crash points, SIGTERM), restart it, and check
// the contract of DESIGN.md from the outside: every produced id is in the
// visible output exactly once, the group's committed offsets match the last
// checkpoint and the partition ends, and a restart resumes quickly.
//
// The visible output is the file sink's committed files, or, for a job with
// jobSpec.KafkaSink (sink.type: kafka, a fresh output topic), what an
// independent read_committed consumer (franz-go) reads from the output
// topic, to the end of every partition once the job stopped; the
// kafka_*_test.go scenarios also ask the brokers about the job's
// transactions (kadm DescribeTransactions, DescribeProducers) and run
// `connector txns list`.
//
// The package owns no product code; everything it knows about the connector
// is the contract (CLI, config keys, file-sink visibility, /metrics,
// /readyz, /api/checkpoints, CONNECTOR_CRASH_AT) and a few log lines.
// Helpers live in harness_test.go, process_test.go, output_test.go,
// producer_test.go and the *_helpers_test.go files; each other test file is
// one scenario.
//
// The group-mode scenarios (group_test.go) run several processes of one
// job side by side (instances.mode: group), sharing its directories as
// the processes of one host would; group_helpers_test.go reads what each
// member says on /api/job, group_stall_helpers_test.go times the slots'
// handovers from their log lines.
//
// Scenarios that need broker settings the shared broker must not have
// (short transaction timeouts, an authorizer) or stop a broker start a
// second Apache Kafka broker themselves with scripts/kafka (instance
// e2e-tight, free ports; broker_helpers_test.go lists its settings) and
// stop it when the test binary ends; it needs what scripts/kafka needs.
//
// Run them against a real broker (they fail without KAFKA_BROKERS):
//
//	eval "$(scripts/kafka start)"; export KAFKA_BROKERS
//	go test -count=1 -timeout 20m -v ./e2e/
//	scripts/kafka stop
//
// The container tests (container_test.go, compose_test.go) build the
// Dockerfile's runtime stage and the images docker-compose.yml names from
// local material (no registry is needed: docker_helpers_test.go,
// kafka_image_helpers_test.go) and run them with a Docker engine and
// docker-compose (scripts/docker; scripts/test starts it). Without an
// engine they fail, as the others do without Kafka, unless
// CONNECTOR_DOCKER=0 opts out outside CI.
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
//	E2E_KEEP=DIR  copy each job's directory (configs, every run's logs,
//	              checkpoints) to DIR/<job> when its test ends
package e2e
