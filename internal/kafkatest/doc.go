// Package kafkatest hands tests a Kafka broker and fresh topics.
//
// It owns the choice of broker for a test run and nothing else:
//
//   - With KAFKA_BROKERS set (always in CI, where scripts/test starts Apache
//     Kafka), tests use that broker. If it cannot be reached the test fails; it
//     never skips.
//   - Without KAFKA_BROKERS, [Cluster] starts an in-process kfake broker, so
//     fast tests run with no setup. [RealCluster] fails instead: tests that
//     prove exactly-once must run against Apache Kafka.
//   - With CI set and KAFKA_BROKERS unset, every test that asks for a broker
//     fails, so a CI run can never quietly fall back to kfake.
//
// Every topic made by [Topic] has a unique name and is deleted when the test
// ends.
package kafkatest
