package main

// Group mode (instances.mode: group): connector-group-N starts N connector
// processes with one config (the same checkpoint.dir, state.dir and sink
// path, an http.addr each), all at once; the job's consumer group
// <name>.slots shares the job's slots among them, and each slot runs as a
// job of its own, <name>.slot-<k>, whose files (part-<name>.slot-<k>-...)
// land in the one output directory. The drain is measured as the single
// process's: from the first byte any process writes to the moment the
// visible files of all slots hold every record.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// groupNames are the group-mode experiments, run only when --only names
// them: the drain of connector-eo by 1, 2 and 3 processes.
var groupNames = []string{"connector-group-1", "connector-group-2", "connector-group-3"}

// groupSlots is the group contenders' instances.slots: the partitions of
// the load's topics, so that each slot holds one partition and any number
// of processes up to it gets work.
const groupSlots = k2kPartitions

// groupSessionTimeout is the group contenders' instances.session_timeout
// (the default, spelled out): no process dies during a drain, so it does
// not enter the figures.
const groupSessionTimeout = 10 * time.Second

// groupPrefix starts the name of every group contender's job, and so of
// its slot topic (<name>.slots), which the bench deletes after the run.
const groupPrefix = "bench-connector-group-"

// jobName is the name of the connector's job run in dir.
func jobName(dir string) string {
	return "bench-" + strings.ReplaceAll(filepath.Base(dir), ".", "-")
}

// plural is "n one", or "n many" unless n is 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// groupLog is process i's log in the run directory.
func groupLog(i int) string { return fmt.Sprintf("contender-%d.log", i) }

// groupDrain runs s.processes connector processes in group mode from an
// empty output until the topic is drained. CPU is the sum over the
// processes; peak RSS the sum of each process's peak.
func (b *bench) groupDrain(s spec) *result {
	dir, r, ok := b.begin(s)
	if !ok {
		return r
	}
	defer b.deleteTopics(jobName(dir) + ".slots")
	// Every config is written before any process starts, so that they
	// start within a few milliseconds of each other.
	var cfgs, addrs, logs []string
	s.fetchesInFlight = b.o.fetchesInFlight
	for i := range s.processes {
		addr, err := freeAddr()
		if err != nil {
			r.Err = err.Error()
			return r
		}
		cfg := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", i))
		if err := os.WriteFile(cfg, []byte(connectorConfig(s, dir, addr)), 0o644); err != nil {
			r.Err = err.Error()
			return r
		}
		cfgs, addrs, logs = append(cfgs, cfg), append(addrs, addr), append(logs, filepath.Join(dir, groupLog(i)))
	}
	busy0, broker0 := cpuBusy(), pidCPU(b.o.brokerPID)
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	for i := range s.processes {
		p, err := start(fmt.Sprintf("%s-%d", s.name, i), logs[i], nil, filepath.Join(b.o.bin, "connector"), "run", "--config", cfgs[i])
		if err != nil {
			r.Err = err.Error()
			return r
		}
		procs = append(procs, p)
	}

	out := filepath.Join(dir, "out")
	expected := s.expectedBytes()
	deadline := time.Now().Add(b.timeout(s.topic))
	var (
		first, written, end    time.Time
		cpuFirst, final        usage
		busyFirst, brokerFirst time.Duration
	)
	gate := scrapeGate{total: s.topic.Records}
	for {
		if b.ctx.Err() != nil {
			r.Err = "interrupted"
			return r
		}
		if time.Now().After(deadline) {
			v, _ := outputBytes(out)
			r.Err = fmt.Sprintf("not drained after %s: %d of %d bytes visible", b.timeout(s.topic), v, expected)
			return r
		}
		visible, all := outputBytes(out)
		now := time.Now()
		if first.IsZero() && all > 0 {
			first = now
			cpuFirst = sampleAll(procs)
			busyFirst, brokerFirst = cpuBusy(), pidCPU(b.o.brokerPID)
		}
		if visible >= expected {
			end = now
			final = sampleAll(procs)
			break
		}
		if written.IsZero() && gate.due(now) {
			n, m := scrapeAll(addrs)
			gate.saw(now, n)
			if n >= s.topic.Records {
				written = time.Now()
				r.Metrics = m
			}
		}
		for i, p := range procs {
			if !p.alive() {
				r.Err = fmt.Sprintf("process %d exited (%v) with %d of %d bytes visible; see %s", i, p.err, visible, expected, logs[i])
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !written.IsZero() && !first.IsZero() {
		r.Written = written.Sub(first).Seconds()
		r.WrittenPerS = float64(s.topic.Records) / r.Written
	}
	if r.Metrics == nil {
		_, r.Metrics = scrapeAll(addrs)
	}
	if busyFirst == 0 {
		busyFirst, brokerFirst = busy0, broker0
	}
	// procs[0] started first: the start-up is counted from it.
	b.measure(r, procs[0], s, first, end, cpuFirst, final, busyFirst, brokerFirst, cpuBusy(), pidCPU(b.o.brokerPID))

	// All at once, as a deployment is stopped: each process stops its
	// slots with a final checkpoint and leaves the group.
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for i, p := range procs {
		if !p.wait(60 * time.Second) {
			b.log("%s: process %d did not stop within 60s after SIGTERM; killed (see %s)", s.label, i, logs[i])
			p.kill()
		}
	}
	var cps []checkpointDone
	for _, l := range logs {
		cps = append(cps, connectorCheckpoints(l)...)
	}
	b.checkpointStats(r, cps, end)
	groupHandovers(r, logs, procs[0].started, end)
	b.verify(r, s, dir)
	return r
}

// sampleAll sums the processes' usage: their CPU time, and each one's
// peak RSS (the peaks need not coincide: a bound on what they held at
// once).
func sampleAll(procs []*proc) usage {
	var sum usage
	for _, p := range procs {
		u, _ := p.sample()
		sum.CPU += u.CPU
		sum.PeakRSS += u.PeakRSS
	}
	return sum
}

// scrapeAll reads every process's /metrics: the records written by the
// slots they run (connector_records_out_total of each slot's job, labelled
// slot="<k>"), and the samples, each name prefixed with "p<i> ". A slot
// moved between processes takes its counter with it from neither: the
// new owner's starts at 0, so the sum falls short by what the old owner
// wrote, and records/s written is then not reported.
func scrapeAll(addrs []string) (int64, map[string]float64) {
	var n float64
	all := map[string]float64{}
	for i, addr := range addrs {
		m, err := scrape(addr)
		if err != nil {
			continue
		}
		for k, v := range m {
			all[fmt.Sprintf("p%d %s", i, k)] = v
			if k == "connector_records_out_total" || strings.HasPrefix(k, "connector_records_out_total{") {
				n += v
			}
		}
	}
	return int64(n), all
}

// groupHandovers fills r's handover figures from the processes' logs: the
// group's "slot released" lines (why: revoked by a rebalance, lost, or
// stop) and "slot ready" lines, each with its took, up to end.
func groupHandovers(r *result, logs []string, started, end time.Time) {
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.Contains(line, []byte(`"slot re`)) {
				continue
			}
			var e struct {
				Message string  `json:"message"`
				Why     string  `json:"why"`
				Took    float64 `json:"took_ms"`
				Time    string  `json:"time"`
			}
			if json.Unmarshal(line, &e) != nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, e.Time)
			if err != nil || at.After(end) {
				continue
			}
			switch e.Message {
			case "slot released":
				if e.Why == "revoked" || e.Why == "lost" {
					r.Revoked++
					r.ReleaseMaxMs = max(r.ReleaseMaxMs, e.Took)
				}
			case "slot ready":
				r.ReadyMaxMs = max(r.ReadyMaxMs, e.Took)
				r.LastReady = max(r.LastReady, at.Sub(started).Seconds())
			}
		}
		f.Close()
	}
}
