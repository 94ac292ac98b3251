package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The latency runs of the Kafka-to-Kafka experiments: the contender runs on
// a fresh, empty input topic; the bench produces records into it at a fixed
// rate (--latency-rate), each value carrying the time it was handed to the
// producer, while a read_committed consumer of the output topic records,
// for every id, the time it read it. Latency is read time minus produce
// time (one clock: both are this process). Records produced before the
// contender's first output plus --latency-warmup are not measured (the
// start-up backlog); then --latency-duration of them are.

// latencySize is the size of a latency run's values, as the 100 B load's.
const latencySize = 100

// latencyValue appends the value of record id, produced at t (Unix ns):
// {"id":"r0000000042","t":1764540000000000000,"p":"abc..."}, latencySize
// bytes. The id is where lineID reads it; t is at bytes 24-42.
func latencyValue(b []byte, id, t int64) []byte {
	b = append(b, `{"id":"r`...)
	b = appendPadded(b, id, 10)
	b = append(b, `","t":`...)
	b = appendPadded(b, t, 19)
	b = append(b, `,"p":"`...)
	for i := 0; len(b) < latencySize-2; i++ {
		b = append(b, byte('a'+(int(id)+i)%26))
	}
	return append(b, `"}`...)
}

func appendPadded(b []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// producedAt reads the produce time latencyValue put into v.
func producedAt(v []byte) (int64, bool) {
	if len(v) < 43 || string(v[18:24]) != `","t":` {
		return 0, false
	}
	t, err := strconv.ParseInt(string(v[24:43]), 10, 64)
	return t, err == nil
}

// k2kLatency runs one latency measurement of s's contender.
func (b *bench) k2kLatency(s spec) *result {
	dir, r, ok := b.begin(s)
	if !ok {
		return r
	}
	stamp := strings.ReplaceAll(filepath.Base(dir), "_", "-")
	in, out := k2kPrefix+"-lat-in-"+stamp, k2kPrefix+"-lat-out-"+stamp
	rate, dur, warm := float64(b.o.latencyRate), b.o.latencyDuration, b.o.latencyWarmup
	const maxStartup = 2 * time.Minute
	capacity := int64(rate * (dur + warm + maxStartup + 30*time.Second).Seconds())
	// raw stops after --records: more than will ever be produced.
	s.topic = topic{Name: in, Records: capacity, Size: latencySize}
	s.outTopic = out
	r.Topic, r.OutTopic, r.Rate, r.Isolation = topic{Name: in, Size: latencySize}, out, rate, "read_committed"
	for _, t := range []string{in, out} {
		if err := b.createTopic(t); err != nil {
			r.Err = err.Error()
			return r
		}
	}
	if !b.o.keep {
		defer b.deleteTopics(in, out)
	}

	// The output's reader: lat[id] is id's latency in ns, 0 while unseen.
	lat := make([]int64, capacity)
	var (
		seen, firstSeen atomic.Int64
		stopReading     atomic.Bool
		check           verification
		readErr         error
		readDone        = make(chan struct{})
	)
	go func() {
		defer close(readDone)
		check, _, readErr = b.consume(b.ctx, out, capacity, true, time.Hour, stopReading.Load, func(v []byte, at time.Time) {
			id, _ := lineID(v)
			t, ok := producedAt(v)
			if !ok {
				return
			}
			lat[id] = max(1, at.UnixNano()-t)
			firstSeen.CompareAndSwap(0, at.UnixNano())
			seen.Add(1)
		})
	}()
	defer func() {
		stopReading.Store(true)
		<-readDone
	}()

	p, _, err := b.launch(s, dir, false, "contender.log")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.kill()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b.o.brokers, ",")...), kgo.DefaultProduceTopic(in),
		kgo.ProducerLinger(0))
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer pcl.Close()
	var produceErr atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			produceErr.CompareAndSwap(nil, &err)
		}
	}

	// Produce at rate: warm-up until the first output plus warm, then
	// the measured records for dur.
	var (
		produced, from, to int64 = 0, -1, -1
		mStart, mEnd       time.Time
		u0, u1             usage
		busy0, busy1       time.Duration
		broker0, broker1   time.Duration
	)
	began := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for to < 0 {
		select {
		case <-b.ctx.Done():
			r.Err = "interrupted"
			return r
		case <-tick.C:
		}
		now := time.Now()
		if e := produceErr.Load(); e != nil {
			r.Err = fmt.Sprintf("produce to %s: %v", in, *e)
			return r
		}
		if !p.alive() {
			r.Err = fmt.Sprintf("exited (%v); see %s", p.err, filepath.Join(dir, "contender.log"))
			return r
		}
		switch fs := firstSeen.Load(); {
		case from < 0 && fs == 0 && now.Sub(began) > maxStartup:
			r.Err = fmt.Sprintf("no output after %s", maxStartup)
			return r
		case from < 0 && fs != 0 && now.Sub(time.Unix(0, fs)) >= warm:
			from, mStart = produced, now
			u0, _ = p.sample()
			busy0, broker0 = busyOthers(), pidCPU(b.o.brokerPID)
		case from >= 0 && now.Sub(mStart) >= dur:
			to, mEnd = produced, now
			u1, _ = p.sample()
			busy1, broker1 = busyOthers(), pidCPU(b.o.brokerPID)
			continue
		}
		for target := min(capacity, int64(rate*now.Sub(began).Seconds())); produced < target; produced++ {
			t := time.Now()
			pcl.Produce(b.ctx, &kgo.Record{Key: []byte("r" + strconv.FormatInt(produced, 10)),
				Value: latencyValue(make([]byte, 0, latencySize), produced, t.UnixNano()), Timestamp: t}, promise)
		}
	}
	if err := pcl.Flush(b.ctx); err != nil {
		r.Err = fmt.Sprintf("flush: %v", err)
		return r
	}
	// Wait for the rest of the output: at most three checkpoint intervals
	// and 10 s.
	wait := time.Now().Add(10*time.Second + 3*s.interval)
	for seen.Load() < produced && time.Now().Before(wait) && p.alive() {
		time.Sleep(20 * time.Millisecond)
	}
	final, _ := p.sample()
	grace := 60 * time.Second
	if s.kind == "flink" {
		grace = 20 * time.Second
	}
	if !p.stop(grace) {
		b.log("%s did not stop within %s after SIGTERM; killed", s.label, grace)
	}
	time.Sleep(500 * time.Millisecond) // what the stop committed
	stopReading.Store(true)
	<-readDone
	if readErr != nil {
		r.Err = fmt.Sprintf("read %s: %v", out, readErr)
		return r
	}

	var ls []float64
	for _, ns := range lat[from:to] {
		if ns > 0 {
			ls = append(ls, float64(ns)/1e6)
		}
	}
	slices.Sort(ls)
	r.Measured, r.LatSeen = to-from, int64(len(ls))
	if len(ls) > 0 {
		r.LatP50, r.LatP90, r.LatP99, r.LatMax = percentile(ls, 50), percentile(ls, 90), percentile(ls, 99), ls[len(ls)-1]
	}
	window := mEnd.Sub(mStart)
	r.Drain = window.Seconds()
	r.RecordsPerS = float64(r.Measured) / r.Drain
	r.MBPerS = r.RecordsPerS * latencySize / 1e6
	r.Startup = time.Unix(0, firstSeen.Load()).Sub(p.started).Seconds()
	r.CPU, r.CPUTotal = (u1.CPU - u0.CPU).Seconds(), final.CPU.Seconds()
	r.CPUPerM = r.CPU / (float64(r.Measured) / 1e6)
	if r.CPU > 0 {
		r.RecPerCPU = float64(r.Measured) / r.CPU
	}
	r.PeakRSSMB = float64(final.PeakRSS) / (1 << 20)
	if b.o.brokerPID > 0 {
		r.BrokerCPU = (broker1 - broker0).Seconds()
	}
	r.OtherCPU = max(0, (busy1-busy0).Seconds()-r.CPU-r.BrokerCPU)

	// Every id produced, warm-up included, exactly once.
	r.Topic.Records = produced
	check.Missing = produced - check.Distinct
	r.Check = &check
	if check.ExactlyOnce(produced) {
		r.Verified = "exactly once"
	} else {
		r.Verified = check.String()
	}
	r.Verified = fmt.Sprintf("%s (%d records)", r.Verified, produced)

	var cps []checkpointDone
	switch s.kind {
	case "connector":
		cps = connectorCheckpoints(filepath.Join(dir, "contender.log"))
	case "flink":
		cps = flinkCheckpoints(filepath.Join(dir, "contender.log.flink"))
	}
	cps = slices.DeleteFunc(cps, func(c checkpointDone) bool { return c.at.Before(mStart) })
	b.checkpointStats(r, cps, mEnd)
	if !b.o.keep {
		_ = os.RemoveAll(filepath.Join(dir, "data"))
		_ = os.RemoveAll(filepath.Join(dir, "checkpoints"))
	}
	return r
}
