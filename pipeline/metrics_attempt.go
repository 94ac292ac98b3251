package pipeline

import (
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
	"github.com/connector-dev/connector/state"
	"github.com/connector-dev/connector/transform"
)

// attemptMetrics is the collector of what the objects of the running
// attempt count: the source's consumer lag (source.Lagger), the records
// each transform step dropped (transform.Chain.Stats), the sink's bytes and
// files (sink.StatsReporter) and each worker's Pebble state
// (metrics_state.go). It reads them when scraped, so the data path pays
// nothing for them.
//
// The Job registers it once. Each attempt attaches its objects once its
// graph is built and detaches them before it closes them (see attach), so
// a scrape never reads a closed object. Counters never go down across
// restarts: what a detached attempt counted is carried and added to what
// the next one counts from zero. Gauges (lag, Pebble's sizes) are absent
// between attempts.
type attemptMetrics struct {
	lag, dropped                      *prometheus.Desc
	sinkBytes, sinkFiles, sinkRecords *prometheus.Desc
	sinkTxnCommits, sinkTxnAborts     *prometheus.Desc
	sinkOldestTxn, sinkTxnTimeout     *prometheus.Desc
	state                             stateDescs

	mu      sync.Mutex
	cur     *attemptObjects // nil between attempts
	carried carried
}

// attemptObjects are the objects of one attempt that count something.
type attemptObjects struct {
	source source.Source
	sink   sink.Sink
	chains []*transform.Chain // per worker; nil entries: no transforms
	stores []*state.Store     // per worker; nil entries: stateless
}

// carried is what the attempts before the current one counted.
type carried struct {
	dropped map[string]uint64 // by step name, "<index>:<kind>"
	sink    *sink.Stats       // nil until a sink reported Stats
	state   map[int]stateCounts
}

var _ prometheus.Collector = (*attemptMetrics)(nil)

func newAttemptMetrics() *attemptMetrics {
	return &attemptMetrics{
		lag: prometheus.NewDesc("connector_consumer_lag_records",
			"Records between the reader's next offset and the partition's high watermark, as of the reader's last fetch of the partition.",
			[]string{"topic", "partition"}, nil),
		dropped: prometheus.NewDesc("connector_records_dropped_total",
			"Records a transform step dropped, over all workers: filtered out (transform=\"filter\"), duplicates (transform=\"dedup\").",
			[]string{"step", "transform"}, nil),
		sinkBytes: prometheus.NewDesc("connector_sink_written_bytes_total",
			"Bytes the sink wrote to its output (keys and values for kafka), committed or not yet (sinks that count them: file, kafka).", nil, nil),
		sinkFiles: prometheus.NewDesc("connector_sink_committed_files_total",
			"Files the sink made visible by committing them (sinks that count them: file).", nil, nil),
		sinkRecords: prometheus.NewDesc("connector_sink_written_records_total",
			"Records the sink produced to its output, committed or not yet (sinks that count them: kafka).", nil, nil),
		sinkTxnCommits: prometheus.NewDesc("connector_sink_transactions_committed_total",
			"Transactions the sink committed (transactional sinks: kafka).", nil, nil),
		sinkTxnAborts: prometheus.NewDesc("connector_sink_transactions_aborted_total",
			"Transactions the sink aborted: at start (left open by an earlier run), on a failed pre-commit, on a stop (transactional sinks: kafka).", nil, nil),
		sinkOldestTxn: prometheus.NewDesc("connector_sink_oldest_open_transaction_seconds",
			"Age of the sink's oldest open transaction, 0 if none; the broker aborts a transaction older than its timeout (transactional sinks: kafka).", nil, nil),
		sinkTxnTimeout: prometheus.NewDesc("connector_sink_transaction_timeout_seconds",
			"The sink's transaction timeout (sink.transaction_timeout), for alerts on connector_sink_oldest_open_transaction_seconds (transactional sinks: kafka).", nil, nil),
		state:   newStateDescs(),
		carried: carried{dropped: map[string]uint64{}, state: map[int]stateCounts{}},
	}
}

// attach makes o the objects Collect reads, until the returned detach is
// called. The attempt calls detach before it closes any of them; detach
// waits for a scrape in progress.
func (m *attemptMetrics) attach(o *attemptObjects) (detach func()) {
	m.mu.Lock()
	m.cur = o
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.carry(o)
		m.cur = nil
	}
}

// carry adds what o counted to the carried counts.
func (m *attemptMetrics) carry(o *attemptObjects) {
	for _, c := range o.chains {
		if c != nil {
			for _, s := range c.Stats() {
				m.carried.dropped[s.Name] += s.Dropped
			}
		}
	}
	if r, ok := o.sink.(sink.StatsReporter); ok {
		m.carried.sink = addStats(m.carried.sink, r.Stats())
	}
	for w, st := range o.stores {
		if st != nil {
			m.carried.state[w] = m.carried.state[w].add(countsOf(st, st.Metrics()))
		}
	}
}

func addStats(a *sink.Stats, b sink.Stats) *sink.Stats {
	if a != nil {
		b.BytesWritten += a.BytesWritten
		b.FilesCommitted += a.FilesCommitted
		b.RecordsWritten += a.RecordsWritten
		b.TransactionsCommitted += a.TransactionsCommitted
		b.TransactionsAborted += a.TransactionsAborted
	}
	return &b
}

func (m *attemptMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.lag
	ch <- m.dropped
	ch <- m.sinkBytes
	ch <- m.sinkFiles
	ch <- m.sinkRecords
	ch <- m.sinkTxnCommits
	ch <- m.sinkTxnAborts
	ch <- m.sinkOldestTxn
	ch <- m.sinkTxnTimeout
	m.state.describe(ch)
}

func (m *attemptMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.cur
	if o == nil {
		o = &attemptObjects{}
	}
	if l, ok := o.source.(source.Lagger); ok {
		for _, x := range l.Lag() {
			ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, float64(x.Records), x.Topic, strconv.Itoa(int(x.Partition)))
		}
	}
	m.collectDropped(ch, o.chains)
	m.collectSink(ch, o.sink)
	m.collectState(ch, o.stores)
}

// collectDropped emits one series per transform step, summed over the
// workers' chains and the carried counts.
func (m *attemptMetrics) collectDropped(ch chan<- prometheus.Metric, chains []*transform.Chain) {
	total := make(map[string]uint64, len(m.carried.dropped))
	for name, n := range m.carried.dropped {
		total[name] = n
	}
	for _, c := range chains {
		if c != nil {
			for _, s := range c.Stats() {
				total[s.Name] += s.Dropped
			}
		}
	}
	for name, n := range total {
		step, kind, _ := strings.Cut(name, ":")
		ch <- prometheus.MustNewConstMetric(m.dropped, prometheus.CounterValue, float64(n), step, kind)
	}
}

// collectSink emits the sink's counts, the carried ones added; the age of
// the oldest open transaction is the current attempt's only (an attempt's
// transactions end with it).
func (m *attemptMetrics) collectSink(ch chan<- prometheus.Metric, snk sink.Sink) {
	stats := m.carried.sink
	var oldest, timeout float64
	if r, ok := snk.(sink.StatsReporter); ok {
		cur := r.Stats()
		oldest, timeout = cur.OldestOpenTransaction.Seconds(), cur.TransactionTimeout.Seconds()
		stats = addStats(stats, cur)
	}
	if stats == nil {
		return
	}
	for _, c := range []struct {
		d *prometheus.Desc
		n uint64
	}{
		{m.sinkBytes, stats.BytesWritten}, {m.sinkFiles, stats.FilesCommitted}, {m.sinkRecords, stats.RecordsWritten},
		{m.sinkTxnCommits, stats.TransactionsCommitted}, {m.sinkTxnAborts, stats.TransactionsAborted},
	} {
		ch <- prometheus.MustNewConstMetric(c.d, prometheus.CounterValue, float64(c.n))
	}
	ch <- prometheus.MustNewConstMetric(m.sinkOldestTxn, prometheus.GaugeValue, oldest)
	if timeout > 0 {
		ch <- prometheus.MustNewConstMetric(m.sinkTxnTimeout, prometheus.GaugeValue, timeout)
	}
}
