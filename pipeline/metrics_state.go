package pipeline

import (
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/connector-dev/connector/state"
)

// stateDescs are the families of the workers' Pebble state stores
// (state.Store.Metrics), labelled by worker: a few gauges of its size and
// shape, and counters of its background work and block cache, carried
// across attempts (attemptMetrics).
type stateDescs struct {
	diskUsage, memtable, readAmp, sstables, cacheSize *prometheus.Desc // gauges
	compactions, flushes, cacheHits, cacheMisses      *prometheus.Desc // counters
	stalls, stallSeconds                              *prometheus.Desc // counters
}

func newStateDescs() stateDescs {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"worker"}, nil)
	}
	return stateDescs{
		diskUsage:    d("connector_state_disk_usage_bytes", "Disk space the worker's state database uses (sstables, blobs, WAL, manifests)."),
		memtable:     d("connector_state_memtable_bytes", "Bytes allocated by the worker's state memtables."),
		readAmp:      d("connector_state_read_amplification", "Sstables and sublevels a point read of the worker's state may have to look at."),
		sstables:     d("connector_state_sstables", "Live sstables of the worker's state database."),
		cacheSize:    d("connector_state_block_cache_bytes", "Bytes in the worker's state block cache."),
		compactions:  d("connector_state_compactions_total", "Compactions of the worker's state database."),
		flushes:      d("connector_state_flushes_total", "Memtable flushes of the worker's state database."),
		cacheHits:    d("connector_state_block_cache_hits_total", "Block cache hits of the worker's state reads."),
		cacheMisses:  d("connector_state_block_cache_misses_total", "Block cache misses of the worker's state reads."),
		stalls:       d("connector_state_write_stalls_total", "Times the worker's state database held its writes (memtables waiting to be flushed, too many L0 files): the worker's records and barriers waited too."),
		stallSeconds: d("connector_state_write_stall_seconds_total", "Time the worker's state database held its writes, in all."),
	}
}

func (d stateDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.diskUsage, d.memtable, d.readAmp, d.sstables, d.cacheSize,
		d.compactions, d.flushes, d.cacheHits, d.cacheMisses, d.stalls, d.stallSeconds} {
		ch <- x
	}
}

// stateCounts are the counters of one worker's state database.
type stateCounts struct {
	compactions, flushes, cacheHits, cacheMisses int64
	stalls                                       int64
	stalled                                      time.Duration
}

// countsOf returns st's counters; pm is st.Metrics() (nil: st is closed).
func countsOf(st *state.Store, pm *pebble.Metrics) stateCounts {
	if pm == nil {
		return stateCounts{}
	}
	stalls, stalled := st.WriteStalls()
	return stateCounts{pm.Compact.Count, pm.Flush.Count, pm.BlockCache.Hits, pm.BlockCache.Misses, stalls, stalled}
}

func (c stateCounts) add(o stateCounts) stateCounts {
	return stateCounts{c.compactions + o.compactions, c.flushes + o.flushes, c.cacheHits + o.cacheHits, c.cacheMisses + o.cacheMisses,
		c.stalls + o.stalls, c.stalled + o.stalled}
}

// collectState emits the gauges of the attached stores and the counters
// of every worker that ever had a store. Called with m.mu held.
func (m *attemptMetrics) collectState(ch chan<- prometheus.Metric, stores []*state.Store) {
	d := m.state
	counts := make(map[int]stateCounts, len(m.carried.state))
	for w, c := range m.carried.state {
		counts[w] = c
	}
	for w, st := range stores {
		var pm *pebble.Metrics
		if st != nil {
			pm = st.Metrics()
		}
		if pm == nil {
			continue
		}
		worker := strconv.Itoa(w)
		gauge := func(desc *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, worker)
		}
		total := pm.Total()
		gauge(d.diskUsage, float64(pm.DiskSpaceUsage()))
		gauge(d.memtable, float64(pm.MemTable.Size))
		gauge(d.readAmp, float64(pm.ReadAmp()))
		gauge(d.sstables, float64(total.TablesCount))
		gauge(d.cacheSize, float64(pm.BlockCache.Size))
		counts[w] = counts[w].add(countsOf(st, pm))
	}
	for w, c := range counts {
		worker := strconv.Itoa(w)
		counter := func(desc *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), worker)
		}
		counter(d.compactions, c.compactions)
		counter(d.flushes, c.flushes)
		counter(d.cacheHits, c.cacheHits)
		counter(d.cacheMisses, c.cacheMisses)
		counter(d.stalls, c.stalls)
		ch <- prometheus.MustNewConstMetric(d.stallSeconds, prometheus.CounterValue, c.stalled.Seconds(), worker)
	}
}
