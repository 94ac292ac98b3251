// Package metrics is the connector's plumbing on prometheus/client_golang:
// the process's registry (NewRegistry: Go runtime, process and
// connector_build_info collectors), the collector that exposes franz-go's
// client metrics (KafkaClients, on plugin/kprom) for Kafka clients that come
// and go, and reading values back from a registry or a scrape (Gather,
// ParseText, Snapshot) for progress lines and tests.
//
// It does not define the job's metrics (package pipeline does, and registers
// them once per Job), does not serve HTTP (package httpapi serves a
// prometheus.Gatherer with promhttp) and has no exposition format of its
// own: client_golang renders every family.
//
// # Lifetime
//
// A registry lives as long as the process (or the test). Everything is
// registered once: a collector whose data comes from objects that live
// shorter (Kafka clients, which a job's attempts open and close) stays
// registered and swaps what it reads, as KafkaClients does.
//
// # Concurrency
//
// Every function and method is safe for concurrent use; scrapes run on the
// HTTP server's goroutines while the job updates its metrics.
package metrics
