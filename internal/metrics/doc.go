// Package metrics is the connector's metric registry and its Prometheus text
// exposition (format 0.0.4), with no dependency on a Prometheus client.
//
// It owns counters, gauges and histograms, their identity (a name plus
// label pairs) and their rendering for /metrics. It does not serve HTTP
// (package httpapi does) and does not decide what is measured: the runtime
// asks the registry for the metrics it updates.
//
// # Usage
//
// Look a metric up once and keep the pointer; the lookup takes a lock, the
// updates do not:
//
//	reg := metrics.NewRegistry()
//	out := reg.Counter("connector_records_out_total", "Records written to the sink.", "worker", "2")
//	out.Add(n) // hot path: one atomic add
//
// Asking twice for the same name and labels returns the same metric; the
// label order does not matter. Several series of one name share its HELP
// and TYPE, taken from the first lookup.
//
// # Concurrency
//
// Every method is safe for concurrent use. Counter and Gauge updates are
// lock-free atomics. A Histogram takes a short mutex per observation, so a
// scrape sees its buckets, sum and count consistent with one another.
//
// Misuse is a bug and panics: an invalid metric or label name, an odd
// number of label arguments, one name registered as two types, or
// histogram buckets that are not strictly increasing.
package metrics
