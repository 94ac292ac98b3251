package metrics

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/connector-dev/connector/internal/offheap"
)

// BuildInfo is what connector_build_info's labels say about the binary.
// Empty fields are reported as "unknown".
type BuildInfo struct {
	Version   string // the connector's version (cmd/connector's main.version)
	GoVersion string // the Go toolchain that built it
	FranzGo   string // the franz-go module linked in
	Pebble    string // the Pebble module linked in
}

// NewRegistry returns the registry of a connector process, holding the
// Go runtime's collector (go_*), the process collector (process_*: CPU,
// memory, file descriptors), connector_build_info and
// connector_offheap_bytes. The job's own metrics are added by pipeline.New.
func NewRegistry(info BuildInfo) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(info),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "connector_offheap_bytes",
			Help: "Bytes of in-memory tables mapped outside the Go heap (the dedup's index): part of process_resident_memory_bytes, in none of go_memstats_*.",
		}, func() float64 { return float64(offheap.Mapped()) }),
	)
	return reg
}

func buildInfo(info BuildInfo) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "connector_build_info",
		Help: "Always 1; the labels name the connector's version and the Go, franz-go and Pebble versions it was built with.",
		ConstLabels: prometheus.Labels{
			"version":   cmp.Or(info.Version, "unknown"),
			"goversion": cmp.Or(info.GoVersion, "unknown"),
			"franz_go":  cmp.Or(info.FranzGo, "unknown"),
			"pebble":    cmp.Or(info.Pebble, "unknown"),
		},
	})
	g.Set(1)
	return g
}
