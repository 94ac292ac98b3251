package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// settleDisk writes back every dirty page of the machine (sync(2)) before a
// run, so that a drain does not pay for what was written before it: the
// topic just produced (1 GB for 10M x 100 B), or the previous contender's
// output. Without it the first run after a production met fsyncs of up to
// a second and state flushes stalled behind them (bench/RESULTS.md,
// "Write stalls, and the disk's writeback before a run"). It logs what it wrote back when that took
// longer than a second.
func (b *bench) settleDisk() {
	dirty := dirtyBytes()
	began := time.Now()
	syscall.Sync()
	if took := time.Since(began); took > time.Second {
		b.log("wrote back %d MiB of dirty pages before the run in %.1fs", dirty>>20, took.Seconds())
	}
}

// dirtyBytes is the machine's dirty and under-writeback page cache
// (/proc/meminfo), 0 if unknown.
func dirtyBytes() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var n int64
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "Dirty:" || f[0] == "Writeback:") {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			n += kb << 10
		}
	}
	return n
}
