package main

import (
	"fmt"
	"io"
	rtmetrics "runtime/metrics"

	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/internal/offheap"
)

// peaks is the largest of each part of the process's memory seen at the
// readings of the job's metrics (every pollEvery): where a peak RSS goes.
type peaks struct {
	heap, offheap, memtables, blockCache float64
	sample                               [1]rtmetrics.Sample
}

// observe takes one reading: the Go heap's objects (live and not yet
// swept: the heap's memory in use, without its free spans or the
// runtime's own), the off-heap tables (internal/offheap), and Pebble's
// memtables and block cache from the job's metrics s.
func (p *peaks) observe(s metrics.Snapshot) {
	p.sample[0].Name = "/memory/classes/heap/objects:bytes"
	rtmetrics.Read(p.sample[:])
	objects := float64(p.sample[0].Value.Uint64())
	p.heap = max(p.heap, objects)
	p.offheap = max(p.offheap, float64(offheap.Mapped()))
	if v, ok := s.Sum("connector_state_memtable_bytes"); ok {
		p.memtables = max(p.memtables, v)
	}
	if v, ok := s.Sum("connector_state_block_cache_bytes"); ok {
		p.blockCache = max(p.blockCache, v)
	}
}

func (p *peaks) print(w io.Writer) {
	fmt.Fprintf(w, "connprof: peaks: Go heap objects %.0f MiB, off-heap tables %.0f MiB, Pebble memtables %.0f MiB, block cache %.0f MiB\n",
		p.heap/(1<<20), p.offheap/(1<<20), p.memtables/(1<<20), p.blockCache/(1<<20))
}
