package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// warmTopic reads the log segments of topic t in the broker's log directory
// (--broker-log-dir) so that the run after it reads its input from memory:
// on a VM that reclaims pages untouched for a minute while memory is free
// (a DAMON pageout scheme), a drain would otherwise read part of its topic
// from disk now and then, and measure the disk (bench/RESULTS.md, "The 1 KB
// stateless drain"). It logs a read slower than 1 GB/s (this machine's disk
// reads 0.8 GB/s; its memory, through read, 3-5). Without the option, or if
// the topic has no directory there, it does nothing.
func (b *bench) warmTopic(t topic) {
	if b.o.brokerLogDir == "" || t.Name == "" {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(b.o.brokerLogDir, t.Name+"-*"))
	own := regexp.MustCompile("^" + regexp.QuoteMeta(t.Name) + `-[0-9]+$`)
	began := time.Now()
	var n int64
	for _, d := range dirs {
		if !own.MatchString(filepath.Base(d)) {
			continue
		}
		segs, _ := filepath.Glob(filepath.Join(d, "*.log"))
		for _, s := range segs {
			f, err := os.Open(s)
			if err != nil {
				continue
			}
			m, _ := io.Copy(io.Discard, f)
			_ = f.Close()
			n += m
		}
	}
	took := time.Since(began)
	rate := float64(n) / 1e9 / max(took.Seconds(), 1e-9)
	if rate < 1 { // slower than this disk, let alone memory
		b.log("warmed %s: read %.0f MB of its log in %.1fs (%.2f GB/s: part of it from disk)", t.Name, float64(n)/1e6, took.Seconds(), rate)
	}
}
