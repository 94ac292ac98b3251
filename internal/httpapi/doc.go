// Package httpapi serves the connector's HTTP endpoints (DESIGN.md, the
// contract):
//
//	GET /healthz          200 "ok" while the process runs and Config.Live reports nil,
//	                      else 503 "unhealthy: <why>" (a wedged pipeline)
//	GET /readyz           200 "ready" when Config.Ready reports nil, else 503 "not ready: <why>"
//	GET /metrics          Config.Metrics through promhttp: Prometheus text format 0.0.4,
//	                      or the format the scraper negotiates
//	GET /api/checkpoints  Config.Checkpoints() as JSON; 500 {"error": "..."} on error
//	GET /api/job          Config.Job() as JSON (config without secrets, state, counters,
//	                      partitions and their lag), the same way
//	GET /                 the web page (ui/, embedded): status, throughput, lag and the
//	                      checkpoint history, polling the two above; its files under /ui/
//
// It owns the listener, the routing and the page only. What "ready" means
// and what the checkpoint listing and the job's details hold are the
// runtime's, passed in as functions; the metrics are a prometheus.Gatherer
// (the process's registry, package metrics, holding the job's metrics,
// package pipeline).
package httpapi
