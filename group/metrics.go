package group

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metrics are the group's own metrics, on the process's registry.
type metrics struct {
	owned    prometheus.Gauge
	events   *prometheus.CounterVec
	handover *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "connector_group_slots_owned", Help: "Slots this process runs (or is stopping), of instances.slots.",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "connector_group_rebalance_events_total",
			Help: "Rebalance callbacks of the group protocol: assigned, revoked (a rebalance moved slots away), lost (this member was dropped).",
		}, []string{"event"}),
		handover: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "connector_group_handover_seconds",
			Help:    "Handover durations of one slot: release (stop asked to final checkpoint committed and lock released), acquire (assigned to the slot's job ready: lock taken, state restored, source positioned).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120},
		}, []string{"phase"}),
	}
	reg.MustRegister(m.owned, m.events, m.handover)
	for _, e := range []string{"assigned", "revoked", "lost"} {
		m.events.WithLabelValues(e)
	}
	return m
}

// Gather is what /metrics serves: the process's registry and each running
// slot's job metrics, labelled slot="<k>".
func (m *Member) Gather() ([]*dto.MetricFamily, error) {
	gs := prometheus.Gatherers{m.reg}
	m.mu.Lock()
	for _, k := range slices.Sorted(maps.Keys(m.slots)) {
		gs = append(gs, labelled(m.slots[k].reg, "slot", strconv.Itoa(k)))
	}
	m.mu.Unlock()
	return gs.Gather()
}

// labelled gathers g with one more label on every metric.
func labelled(g prometheus.Gatherer, name, value string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for _, mf := range mfs {
			for _, mt := range mf.Metric {
				mt.Label = append(mt.Label, &dto.LabelPair{Name: &name, Value: &value})
				slices.SortFunc(mt.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			}
		}
		return mfs, err
	})
}
