package metrics

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// KafkaClients exposes franz-go's client metrics (plugin/kprom: connections,
// bytes and errors per broker, fetched and produced bytes per topic, what a
// client buffers) for every open Kafka client of a job, each labelled
// client="<name>", under the names <namespace>_<kprom's name>.
//
// Register it once; then give each new client its own Hooks. A kprom.Metrics
// serves exactly one client (it makes its series when the client opens and
// drops them when it closes), so every client gets one, registered on a
// private registry that this collector gathers while the client is open.
// The clients of a job come and go with its attempts; the registration
// stays. A new client's counters (and histograms) go on from where the
// closed clients of the same series left them, as of their last scrape: a
// series never goes down in a process's life, as the job's own counters
// do not across an in-process restart, and one of a client gone for good
// stays at its total.
//
// kprom names two gauges with a _total suffix, which Prometheus' naming
// rules (promtool check metrics) keep for counters; they are exposed
// without it: <namespace>_buffered_fetch_records and
// <namespace>_buffered_produce_records. A client that sends its own
// fetches gives its hooks its own counts of buffered fetch records and
// bytes (ReportBufferedFetch), which replace kprom's.
type KafkaClients struct {
	namespace string

	mu   sync.Mutex
	open map[*kafkaClient]struct{}
	// retired sums the counter and histogram series of closed clients,
	// as last scraped, by name and labels.
	retired map[string]*series
}

// series is a counter or histogram series: its name, help, type and
// labels, and its values.
type series struct {
	name, help string
	typ        dto.MetricType
	labels     []*dto.LabelPair
	value      float64 // a counter's
	count      uint64  // a histogram's
	sum        float64
	buckets    map[float64]uint64 // cumulative, by upper bound
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	var b strings.Builder
	b.WriteString(name)
	for _, l := range labels { // Gather sorts them by name
		b.WriteString("\xff" + l.GetName() + "=" + l.GetValue())
	}
	return b.String()
}

// add adds o's values to x.
func (x *series) add(o *series) {
	x.value += o.value
	x.count += o.count
	x.sum += o.sum
	for ub, n := range o.buckets {
		if x.buckets == nil {
			x.buckets = map[float64]uint64{}
		}
		x.buckets[ub] += n
	}
}

// metric is x as a metric to emit.
func (x *series) metric() prometheus.Metric {
	m := &dto.Metric{Label: x.labels}
	switch x.typ {
	case dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: &x.value}
	case dto.MetricType_HISTOGRAM:
		h := &dto.Histogram{SampleCount: &x.count, SampleSum: &x.sum}
		for ub, n := range x.buckets {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &ub, CumulativeCount: &n})
		}
		m.Histogram = h
	}
	return constMetric(x.name, x.help, x.typ, m)
}

// seriesOf returns m of family name as a series, if a counter or a
// histogram.
func seriesOf(name, help string, t dto.MetricType, m *dto.Metric) (*series, bool) {
	x := &series{name: name, help: help, typ: t, labels: m.GetLabel()}
	switch t {
	case dto.MetricType_COUNTER:
		x.value = m.GetCounter().GetValue()
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		x.count, x.sum = h.GetSampleCount(), h.GetSampleSum()
		x.buckets = make(map[float64]uint64, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			x.buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
	default:
		return nil, false
	}
	return x, true
}

var _ prometheus.Collector = (*KafkaClients)(nil)

// NewKafkaClients returns a collector for clients whose metrics are named
// <namespace>_*, for example "connector_kafka".
func NewKafkaClients(namespace string) *KafkaClients {
	return &KafkaClients{namespace: namespace, open: map[*kafkaClient]struct{}{}, retired: map[string]*series{}}
}

// Hooks returns the hooks to install on one new client (kgo.WithHooks),
// whose series are labelled client=name. The client's metrics are exposed
// from its creation until its Close. Safe for concurrent use; every client
// needs hooks of its own.
func (k *KafkaClients) Hooks(name string) []kgo.Hook {
	c := &kafkaClient{k: k, reg: prometheus.NewRegistry()}
	m := kprom.NewMetrics(k.namespace, kprom.Registry(c.reg), kprom.WithStaticLabel(prometheus.Labels{"client": name}))
	// c first: at a close it gathers the client's counters before kprom
	// drops its series.
	return []kgo.Hook{c, m}
}

// kafkaClient is one client's kprom registry; its hooks add it to and
// remove it from the collector.
type kafkaClient struct {
	k   *KafkaClients
	reg *prometheus.Registry
	// buffered, if set, counts the client's buffered fetch records and
	// bytes in place of kprom's gauges (ReportBufferedFetch), by the
	// gauges' kprom names.
	buffered atomic.Pointer[map[string]func() int64]
}

// ReportBufferedFetch makes records and bytes the client's buffered fetch
// records and bytes (<namespace>_buffered_fetch_records and _bytes), for a
// client that sends its own fetches: kprom asks franz-go's consumer, which
// such a client does not use, and would say 0.
func (c *kafkaClient) ReportBufferedFetch(records, bytes func() int64) {
	c.buffered.Store(&map[string]func() int64{
		c.k.namespace + "_buffered_fetch_records_total": records,
		c.k.namespace + "_buffered_fetch_bytes":         bytes,
	})
}

var (
	_ kgo.HookNewClient    = (*kafkaClient)(nil)
	_ kgo.HookClientClosed = (*kafkaClient)(nil)
)

func (c *kafkaClient) OnNewClient(*kgo.Client) {
	c.k.mu.Lock()
	c.k.open[c] = struct{}{}
	c.k.mu.Unlock()
}

// OnClientClosed retires the client: its counters and histograms, gathered
// now (before kprom's own hook drops them), are kept in the totals.
func (c *kafkaClient) OnClientClosed(*kgo.Client) {
	last, _ := c.k.gather(c, nil)
	c.k.mu.Lock()
	delete(c.k.open, c)
	for key, x := range last {
		addTo(c.k.retired, key, x)
	}
	c.k.mu.Unlock()
}

// addTo adds x to m's series of key.
func addTo(m map[string]*series, key string, x *series) {
	t := m[key]
	if t == nil {
		t = &series{name: x.name, help: x.help, typ: x.typ, labels: x.labels}
		m[key] = t
	}
	t.add(x)
}

// gather gathers c's registry: its counters and histograms by seriesKey;
// the rest (gauges, with what ReportBufferedFetch gave) emitted into ch if
// not nil.
func (k *KafkaClients) gather(c *kafkaClient, ch chan<- prometheus.Metric) (map[string]*series, error) {
	var reported map[string]func() int64
	if p := c.buffered.Load(); p != nil {
		reported = *p
	}
	out := map[string]*series{}
	fams, err := c.reg.Gather()
	for _, f := range fams {
		name := f.GetName()
		if f.GetType() == dto.MetricType_GAUGE {
			name = strings.TrimSuffix(name, "_total")
		}
		count := reported[f.GetName()]
		for _, m := range f.GetMetric() {
			if x, ok := seriesOf(name, f.GetHelp(), f.GetType(), m); ok {
				out[seriesKey(name, x.labels)] = x
				continue
			}
			if ch == nil {
				continue
			}
			if count != nil && m.GetGauge() != nil {
				v := float64(count())
				m.Gauge.Value = &v
			}
			ch <- constMetric(name, f.GetHelp(), f.GetType(), m)
		}
	}
	return out, err
}

// Describe describes nothing: the collector is unchecked, since its series
// come and go with the clients.
func (k *KafkaClients) Describe(chan<- *prometheus.Desc) {}

// Collect gathers every open client's registry and re-emits its series,
// the counters and histograms added to what closed clients of the same
// series had, and the closed clients' series no open client has.
func (k *KafkaClients) Collect(ch chan<- prometheus.Metric) {
	k.mu.Lock()
	clients := make([]*kafkaClient, 0, len(k.open))
	for c := range k.open {
		clients = append(clients, c)
	}
	k.mu.Unlock()
	gathered := make(map[*kafkaClient]map[string]*series, len(clients))
	for _, c := range clients {
		var err error
		if gathered[c], err = k.gather(c, ch); err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewDesc(k.namespace+"_client_error", "A Kafka client's metrics could not be gathered.", nil, nil), err)
		}
	}
	// Under one lock: a client closed since it was gathered is in retired
	// (gathered again by its close), and only there.
	totals := map[string]*series{}
	k.mu.Lock()
	for c, last := range gathered {
		if _, open := k.open[c]; !open {
			continue
		}
		for key, x := range last {
			addTo(totals, key, x)
		}
	}
	for key, r := range k.retired {
		addTo(totals, key, r)
	}
	emit := make([]prometheus.Metric, 0, len(totals))
	for _, t := range totals {
		emit = append(emit, t.metric())
	}
	k.mu.Unlock()
	for _, m := range emit {
		ch <- m
	}
}

// constMetric rebuilds a gathered series as a metric to emit, with the same
// labels and value.
func constMetric(name, help string, t dto.MetricType, m *dto.Metric) prometheus.Metric {
	names := make([]string, len(m.GetLabel()))
	values := make([]string, len(m.GetLabel()))
	for i, l := range m.GetLabel() {
		names[i], values[i] = l.GetName(), l.GetValue()
	}
	desc := prometheus.NewDesc(name, help, names, nil)
	var (
		out prometheus.Metric
		err error
	)
	switch t {
	case dto.MetricType_COUNTER:
		out, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue(), values...)
	case dto.MetricType_GAUGE:
		out, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue(), values...)
	case dto.MetricType_UNTYPED:
		out, err = prometheus.NewConstMetric(desc, prometheus.UntypedValue, m.GetUntyped().GetValue(), values...)
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		buckets := make(map[float64]uint64, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		out, err = prometheus.NewConstHistogram(desc, h.GetSampleCount(), h.GetSampleSum(), buckets, values...)
	default:
		err = fmt.Errorf("%s: a kprom metric of type %s is not re-exposed", name, t)
	}
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return out
}
