package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// spec is one run of one contender.
type spec struct {
	section     string
	name        string // raw | connector-eo | ... | flink
	label       string
	kind        string // raw | connector | flink
	topic       topic
	parallelism int
	mode        string // exactly_once | at_least_once (connector)
	interval    time.Duration
	dedupKey    string // connector: a dedup transform on this field
	keys        int64  // distinct dedup keys
	// keepEvery, if not 0, makes the dedup's TTL keepEvery times the
	// spacing of a key's records (keys ms), so that of each key's records
	// one in keepEvery is kept (the first, then every keepEvery-th) and
	// the rest are repeats it drops; 0: a TTL below the spacing, every
	// record kept.
	keepEvery int64
	// k2k: Kafka to Kafka (raw-k2k, connector-k2k, flink-k2k); outTopic,
	// made fresh for each run, receives the output.
	k2k      bool
	outTopic string
	txn      bool // raw-k2k-txn: the raw loop commits a transaction every interval
	// pg: Kafka to PostgreSQL (pg.go); pgMode is the connector's sink
	// mode (insert | upsert), copyFiles pg-copy's input.
	pg        bool
	pgMode    string
	copyFiles []string
	// s3: Kafka to S3 (s3.go): format jsonl or parquet, into bucket (made
	// fresh for each run) or, local, into files.
	s3     bool
	format string
	local  bool
	bucket string
	// sinkConfig, if set, is the connector's sink: section (its lines
	// after the first indented by two spaces).
	sinkConfig string
	// processes, if not 0, runs the connector in group mode (group.go):
	// this many processes with one config share the job's groupSlots
	// slots; parallelism is then each slot's.
	processes int
	// fetchesInFlight, if not 0, is the connector's
	// source.fetches_in_flight (--fetches-in-flight).
	fetchesInFlight int
}

// result is what one run measured.
type result struct {
	Section     string `json:"section"`
	Name        string `json:"name"`
	Label       string `json:"label"`
	Kind        string `json:"kind"`
	Topic       topic  `json:"topic"`
	Parallelism int    `json:"parallelism"`
	DedupKeys   int64  `json:"dedup_keys,omitempty"`

	// Startup is from the process's start to its first output byte (raw:
	// to its first record); Drain from then until every record is
	// committed (visible) in the output (raw: read).
	Startup     float64 `json:"startup_s"`
	Drain       float64 `json:"drain_s"`
	RecordsPerS float64 `json:"records_per_s"`
	MBPerS      float64 `json:"mb_per_s"` // value bytes (1e6) per second
	// CPU is the contender's CPU time (user+system) during Drain; CPUTotal
	// also counts its start-up.
	CPU       float64 `json:"cpu_s"`
	CPUTotal  float64 `json:"cpu_total_s"`
	CPUPerM   float64 `json:"cpu_s_per_million"`
	RecPerCPU float64 `json:"records_per_cpu_s"`
	PeakRSSMB float64 `json:"peak_rss_mib"`
	// BrokerCPU and OtherCPU are the broker's CPU time during Drain and
	// the rest of the machine's (other processes), to tell a disturbed run.
	BrokerCPU float64 `json:"broker_cpu_s"`
	OtherCPU  float64 `json:"other_cpu_s"`
	// DBCPU is the PostgreSQL instance's CPU time during Drain (pg.go);
	// OtherCPU then leaves it out.
	DBCPU     float64 `json:"db_cpu_s,omitempty"`
	DBCPUPerM float64 `json:"db_cpu_s_per_million,omitempty"`

	Checkpoints int     `json:"checkpoints,omitempty"` // completed during Drain
	CkptP50     float64 `json:"ckpt_p50_ms,omitempty"`
	CkptP99     float64 `json:"ckpt_p99_ms,omitempty"`
	CkptMax     float64 `json:"ckpt_max_ms,omitempty"`
	// Connector only: the checkpoint's phases (its log's "checkpoint
	// completed"): trigger to metadata durable, which is where Flink's
	// checkpointDuration ends, and the sinks' commit after that.
	CkptDurableP99 float64 `json:"ckpt_durable_p99_ms,omitempty"`
	CkptCommitP99  float64 `json:"ckpt_commit_p99_ms,omitempty"`
	StateBytesMB   float64 `json:"state_mib,omitempty"`     // last checkpoint's state size
	FinalCkpt      float64 `json:"final_ckpt_ms,omitempty"` // connector-off: the final checkpoint of SIGTERM

	// Written is from the first output byte until the connector's
	// connector_records_out_total reached the record count: every record
	// written to a part file, not yet committed.
	Written     float64 `json:"written_s,omitempty"`
	WrittenPerS float64 `json:"written_records_per_s,omitempty"`

	Recovery      float64 `json:"recovery_s,omitempty"` // restart after SIGKILL -> first record committed
	KilledAtBytes int64   `json:"killed_at_bytes,omitempty"`

	// Kafka to Kafka, the latency runs (k2k.go): records produced at Rate
	// per second for Measured of them after a warm-up, and the time from
	// each one's produce to its being read from the output topic.
	OutTopic  string  `json:"out_topic,omitempty"`
	Rate      float64 `json:"rate,omitempty"`
	Measured  int64   `json:"measured,omitempty"`
	LatSeen   int64   `json:"latency_seen,omitempty"` // measured records read back
	LatP50    float64 `json:"latency_p50_ms,omitempty"`
	LatP90    float64 `json:"latency_p90_ms,omitempty"`
	LatP99    float64 `json:"latency_p99_ms,omitempty"`
	LatMax    float64 `json:"latency_max_ms,omitempty"`
	Isolation string  `json:"isolation,omitempty"` // of the consumer that read the output back

	// Kafka to S3 (s3.go): where the output went, its format, the S3
	// server's CPU time during Drain (OtherCPU then leaves it out), and
	// the visible files: how many, their total, smallest and largest size.
	Destination  string  `json:"destination,omitempty"`
	Format       string  `json:"format,omitempty"`
	S3CPU        float64 `json:"s3_cpu_s,omitempty"`
	S3CPUPerM    float64 `json:"s3_cpu_s_per_million,omitempty"`
	Files        int     `json:"files,omitempty"`
	FilesBytes   int64   `json:"files_bytes,omitempty"`
	FileMinBytes int64   `json:"file_min_bytes,omitempty"`
	FileMaxBytes int64   `json:"file_max_bytes,omitempty"`

	// Group mode (group.go): the processes and slots, and from the
	// processes' logs up to the drain's end, the slots a rebalance moved
	// (released as "revoked", or "lost"), the longest of those releases (stop asked
	// to final checkpoint committed and lock released), the longest time
	// from a slot's assignment to its job ready, and when the last slot
	// became ready (seconds after the first process started). CPU and
	// PeakRSSMB are then sums over the processes (each one's own peak).
	Processes    int     `json:"processes,omitempty"`
	Slots        int     `json:"slots,omitempty"`
	Revoked      int     `json:"slots_revoked,omitempty"`
	ReleaseMaxMs float64 `json:"release_max_ms,omitempty"`
	ReadyMaxMs   float64 `json:"ready_max_ms,omitempty"`
	LastReady    float64 `json:"last_ready_s,omitempty"`

	Attempts int `json:"attempts,omitempty"` // runs made (see steadyDrain)
	// Runs is how many runs the reported (median) one was chosen from;
	// RangeMin and RangeMax the range of records/s (recovery: seconds).
	Runs     int                `json:"runs,omitempty"`
	RangeMin float64            `json:"range_min,omitempty"`
	RangeMax float64            `json:"range_max,omitempty"`
	Note     string             `json:"note,omitempty"`
	Verified string             `json:"verified"` // "exactly once" or what is wrong
	Check    *verification      `json:"check,omitempty"`
	Metrics  map[string]float64 `json:"metrics,omitempty"` // the connector's /metrics at drain end
	Dir      string             `json:"dir"`
	Err      string             `json:"error,omitempty"`
}

func (r *result) summary() string {
	s := fmt.Sprintf("%.0f records/s, %.1f MB/s, %.2f CPU s/M, %.0f MiB peak, start-up %.2fs, drain %.2fs",
		r.RecordsPerS, r.MBPerS, r.CPUPerM, r.PeakRSSMB, r.Startup, r.Drain)
	if r.Checkpoints > 0 {
		s += fmt.Sprintf(", %d checkpoints p50 %.0f ms p99 %.0f ms", r.Checkpoints, r.CkptP50, r.CkptP99)
	}
	if r.Recovery > 0 {
		s += fmt.Sprintf(", recovery %.2fs", r.Recovery)
	}
	return s + fmt.Sprintf(" [broker %.1f, other %.1f CPU s] %s", r.BrokerCPU, r.OtherCPU, r.Verified)
}

// otherCores is how many cores other processes used on average during the
// drain.
func (r *result) otherCores() float64 {
	if r.Drain <= 0 {
		return 0
	}
	return r.OtherCPU / r.Drain
}

func newResult(s spec, dir string) *result {
	r := &result{Section: s.section, Name: s.name, Label: s.label, Kind: s.kind, Topic: s.topic,
		Parallelism: s.parallelism, DedupKeys: s.keys, Dir: dir, Processes: s.processes}
	if s.processes > 0 {
		r.Slots = groupSlots
	}
	return r
}

// runDir makes a fresh directory for one run.
func (b *bench) runDir(s spec) (string, error) {
	name := fmt.Sprintf("%s-%s-p%d-%s", s.name, s.topic.Name, s.parallelism, time.Now().Format("150405.000"))
	dir := filepath.Join(b.o.work, strings.ReplaceAll(name, " ", "_"))
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(filepath.Join(dir, "out"), 0o755)
}

func (b *bench) timeout(t topic) time.Duration {
	return 60*time.Second + time.Duration(float64(b.o.timeoutPerMrec)*float64(t.Records)/1e6)
}

// launch starts the contender of s in dir; restore restarts it from its
// last checkpoint (after a kill).
func (b *bench) launch(s spec, dir string, restore bool, logName string) (*proc, string, error) {
	logPath := filepath.Join(dir, logName)
	switch s.kind {
	case "raw":
		args := []string{filepath.Join(b.o.bin, "raw"), "--brokers", b.o.brokers,
			"--topic", s.topic.Name, "--records", strconv.FormatInt(s.topic.Records, 10),
			"--clients", strconv.Itoa(s.parallelism)}
		if s.outTopic != "" {
			args = append(args, "--out-topic", s.outTopic)
		}
		if s.txn {
			args = append(args, "--txn-interval", s.interval.String(),
				"--txn-id", "bench-k2k-raw-"+strings.ReplaceAll(filepath.Base(dir), ".", "-"))
		}
		p, err := start(s.name, logPath, nil, args...)
		return p, "", err
	case "pgcopy":
		args := append([]string{"bash", "-c", pgCopyScript, "pg-copy"}, s.copyFiles...)
		p, err := start(s.name, logPath, []string{"BENCH_PSQL=" + b.o.psql, "BENCH_PG_DSN=" + b.o.pgDSN}, args...)
		return p, "", err
	case "kconnect":
		if b.o.kconnectCP == "" || b.o.kconnectPlugins == "" {
			return nil, "", fmt.Errorf("no --kconnect-classpath or --kconnect-plugins (bench/run sets them)")
		}
		files, err := kconnectFiles(s, dir, b.o.brokers, b.o.kconnectPlugins, b.o.pgDSN)
		if err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			return nil, "", err
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
				return nil, "", err
			}
		}
		p, err := start(s.name, logPath, nil, b.o.java, "-Xmx1g", "-Dlog4j2.configurationFile="+filepath.Join(dir, "log4j2.properties"),
			"-cp", b.o.kconnectCP, "org.apache.kafka.connect.cli.ConnectStandalone",
			filepath.Join(dir, "worker.properties"), filepath.Join(dir, "sink.properties"))
		return p, "", err
	case "connector":
		addr, err := freeAddr()
		if err != nil {
			return nil, "", err
		}
		var env []string
		if s.pg {
			env = []string{"BENCH_PG_DSN=" + b.o.pgDSN}
		}
		if s.s3 {
			env = b.s3Env()
		}
		cfg := filepath.Join(dir, "config.yaml")
		if !restore {
			s.fetchesInFlight = b.o.fetchesInFlight
			if s.s3 {
				s.sinkConfig = b.s3SinkConfig(s, dir)
			}
			if err := os.WriteFile(cfg, []byte(connectorConfig(s, dir, addr)), 0o644); err != nil {
				return nil, "", err
			}
		} else if err := rewriteAddr(cfg, addr); err != nil {
			return nil, "", err
		}
		p, err := start(s.name, logPath, env, filepath.Join(b.o.bin, "connector"), "run", "--config", cfg)
		return p, addr, err
	case "flink":
		if b.o.flinkCP == "" {
			return nil, "", fmt.Errorf("no --flink-classpath")
		}
		job, out := "KafkaToFiles", []string{"--out", filepath.Join(dir, "out")}
		if s.outTopic != "" {
			// The transactional ids are fresh for each run: nothing of
			// an earlier run is aborted or fenced.
			job, out = "KafkaToKafka", []string{"--out-topic", s.outTopic,
				"--txn-prefix", "bench-k2k-flink-" + strings.ReplaceAll(filepath.Base(dir), ".", "-"),
				"--txn-timeout-ms", strconv.FormatInt(flinkTxnTimeout.Milliseconds(), 10)}
		}
		args := []string{b.o.java, "-Xmx" + b.o.flinkHeap, "-Dbench.log=" + logPath + ".flink",
			"-cp", b.o.flinkCP, "dev.connector.bench." + job,
			"--brokers", b.o.brokers, "--topic", s.topic.Name}
		args = append(args, out...)
		args = append(args, "--checkpoints", filepath.Join(dir, "checkpoints"), "--parallelism", strconv.Itoa(s.parallelism),
			"--interval-ms", strconv.FormatInt(s.interval.Milliseconds(), 10),
			"--group", "bench-flink-"+filepath.Base(dir))
		if s.dedupKey != "" {
			args = append(args, "--dedup-key", s.dedupKey, "--ttl-ms", strconv.FormatInt(dedupTTL(s).Milliseconds(), 10))
		}
		if restore {
			args = append(args, "--restore")
		}
		p, err := start(s.name, logPath, nil, args...)
		return p, "", err
	}
	return nil, "", fmt.Errorf("unknown kind %q", s.kind)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// kept says whether record i of the topic is in the output: record i is
// the (i / keys)-th of its key (bench/cmd/load: key i mod keys).
func (s spec) kept(i int64) bool { return s.keepEvery == 0 || (i/s.keys)%s.keepEvery == 0 }

// expectedRecords is the number of records of the output.
func (s spec) expectedRecords() int64 {
	if s.keepEvery == 0 {
		return s.topic.Records
	}
	n := int64(0)
	for b := int64(0); b*s.keys < s.topic.Records; b += s.keepEvery {
		n += min(s.keys, s.topic.Records-b*s.keys)
	}
	return n
}

// expectedBytes is the size of the output (a line a record).
func (s spec) expectedBytes() int64 { return s.expectedRecords() * int64(s.topic.Size+1) }

// dedupTTL is a dedup contender's TTL. Records sharing a key are s.keys ms
// apart (bench/cmd/load: one ms between records, key i mod keys): a TTL of
// 0.9 of that keeps every record and rewrites its key, and the connector's
// dedup remembers about 0.9 x keys values at any time (older time buckets
// expire), the state the label names; Flink's (processing-time TTL)
// remembers all of them during a drain.
func dedupTTL(s spec) time.Duration {
	if s.keepEvery > 0 {
		return time.Duration(s.keys*s.keepEvery) * time.Millisecond
	}
	return max(time.Second, time.Duration(s.keys)*time.Millisecond*9/10)
}

func connectorConfig(s spec, dir, addr string) string {
	transforms, keyBy := "[]", `""`
	if s.dedupKey != "" {
		// Keyed by the dedup's key, as Flink's keyBy: records sharing it
		// meet in one key group.
		transforms = fmt.Sprintf("[{type: dedup, key: %s, ttl: %s}]", s.dedupKey, dedupTTL(s))
		keyBy = s.dedupKey
	}
	name := jobName(dir)
	// Rolled at every checkpoint, as the Flink contender's FileSink row
	// format (OnCheckpointRollingPolicy) and as the file sink did before
	// files spanned checkpoints: the drains compare the same work, and
	// the output is visible at every checkpoint, which they wait for.
	sink := fmt.Sprintf("type: file\n  path: %s\n  format: jsonl\n  roll_on_checkpoint: true", filepath.Join(dir, "out"))
	if s.outTopic != "" {
		// The defaults otherwise: partitioning by key (murmur2), no
		// compression, a 10m transaction timeout (the broker's maximum
		// is 15 min by default).
		sink = fmt.Sprintf("type: kafka\n  topic: %s", s.outTopic)
	}
	if s.pg {
		sink = pgSinkConfig(s, dir)
	}
	if s.sinkConfig != "" {
		sink = s.sinkConfig
	}
	fetches := "" // the connector's default
	if s.fetchesInFlight > 0 {
		fetches = fmt.Sprintf("\n  fetches_in_flight: %d", s.fetchesInFlight)
	}
	instances := ""
	if s.processes > 0 {
		instances = fmt.Sprintf("instances:\n  mode: group\n  slots: %d\n  session_timeout: %s\n", groupSlots, groupSessionTimeout)
	}
	return fmt.Sprintf(`# written by bench/cmd/bench for %q
name: %s
kafka:
  brokers: [%q]
source:
  topics: [%q]
  group: %s
  start_offset: earliest%s
checkpoint:
  interval: %s
  timeout: 60s
  min_pause: 0s
  max_concurrent: 1
  retained: 3
  mode: %s
  dir: %s
state:
  dir: %s
pipeline:
  parallelism: %d
  key_by: %s
  transforms: %s
sink:
  %s
http:
  addr: %s
%s`, s.label, name, "${KAFKA_BROKERS}", s.topic.Name, name, fetches, s.interval, s.mode,
		filepath.Join(dir, "data", "checkpoints"), filepath.Join(dir, "data", "state"),
		s.parallelism, keyBy, transforms, sink, addr, instances)
}

var addrLine = regexp.MustCompile(`(?m)^  addr: .*$`)

func rewriteAddr(cfg, addr string) error {
	b, err := os.ReadFile(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(cfg, addrLine.ReplaceAll(b, []byte("  addr: "+addr)), 0o644)
}

// scrapeGate spaces a drain's scrapes of the connector's /metrics. A
// scrape costs the connector about 2 ms of CPU (its collectors, the text
// encoding: 287 samples); at every 20 ms poll that was 0.1 CPU s a second,
// counted in the connector's CPU and taken from the two cores it shares
// with the broker (2026-12-06: the dedup over 1M keys drained 9% slower
// than in process). The gate lets a scrape through at every poll until one
// counts a record out (the drain's first record, where a scrape marks it),
// then every scrapeSpacing until one counts 90% of the records, then at
// every poll again, so that the moment the last is written is still seen
// to a poll.
type scrapeGate struct {
	total int64     // the records of the drain
	next  time.Time // no scrape before it, unless near
	far   bool      // a record was out, and under 90% of them
}

// scrapeSpacing is the time between scrapes before 90% of the records
// are out.
const scrapeSpacing = 250 * time.Millisecond

// due says whether a scrape is to be made now.
func (g *scrapeGate) due(now time.Time) bool { return !g.far || !now.Before(g.next) }

// saw takes the records out counted by a scrape made at now.
func (g *scrapeGate) saw(now time.Time, out int64) {
	g.far = out > 0 && out*10 < g.total*9
	g.next = now.Add(scrapeSpacing)
}

// scrape scrapes addr if a scrape is due: its samples and the records
// out (connector_records_out_total); ok is false if none was due or it
// failed.
func (g *scrapeGate) scrape(addr string) (m map[string]float64, out int64, ok bool) {
	now := time.Now()
	if !g.due(now) {
		return nil, 0, false
	}
	m, err := scrape(addr)
	if err != nil {
		return nil, 0, false
	}
	out = int64(m["connector_records_out_total"])
	g.saw(now, out)
	return m, out, true
}

// scrape reads the connector's /metrics: sample name (with labels) -> value.
func scrape(addr string) (map[string]float64, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// outputBytes returns the visible and the total (with hidden) bytes in out.
func outputBytes(dir string) (visible, all int64) {
	visible, _, _ = visibleBytes(dir)
	_ = filepathWalkAll(dir, &all)
	return visible, all
}

func filepathWalkAll(dir string, total *int64) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				*total += info.Size()
			}
		}
		return nil
	})
}

// begin prepares run s: its empty run directory and its result, then waits
// for a quiet machine. ok is false if the directory could not be made (the
// result says why).
func (b *bench) begin(s spec) (dir string, r *result, ok bool) {
	return b.beginWith(s, nil)
}

// beginWith is begin with prepare, if set, run before the wait for a quiet
// machine (so that the wait also lets what it started settle).
func (b *bench) beginWith(s spec, prepare func() error) (dir string, r *result, ok bool) {
	dir, err := b.runDir(s)
	r = newResult(s, dir)
	if err != nil {
		r.Err = err.Error()
		return dir, r, false
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			r.Err = err.Error()
			return dir, r, false
		}
	}
	b.warmTopic(s.topic)
	b.settleDisk()
	b.waitQuiet()
	b.log("%s / %s: starting (%s, parallelism %d)", s.section, s.label, s.topic.Name, s.parallelism)
	return dir, r, true
}

// drain runs a contender from an empty output until the topic is drained.
func (b *bench) drain(s spec) *result {
	if s.k2k {
		return b.k2kDrain(s)
	}
	if s.pg {
		return b.pgDrain(s)
	}
	if s.s3 {
		return b.s3Drain(s)
	}
	if s.processes > 0 {
		return b.groupDrain(s)
	}
	dir, r, ok := b.begin(s)
	if !ok {
		return r
	}
	busy0, broker0 := cpuBusy(), pidCPU(b.o.brokerPID)
	p, addr, err := b.launch(s, dir, false, "contender.log")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.kill()
	if s.kind == "raw" {
		b.finishRaw(r, p, busy0, broker0, s)
		return r
	}

	out := filepath.Join(dir, "out")
	expected := s.expectedBytes()
	deadline := time.Now().Add(b.timeout(s.topic))
	off := s.kind == "connector" && s.interval >= time.Hour
	var (
		first, written, end    time.Time
		cpuFirst, cpuWritten   usage
		final                  usage
		busyFirst, brokerFirst time.Duration
		termSent               time.Time // connector-off: SIGTERM sent once every record was written
	)
	gate := scrapeGate{total: s.expectedRecords()}
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
			cpuFirst, _ = p.sample()
			busyFirst, brokerFirst = cpuBusy(), pidCPU(b.o.brokerPID)
		}
		if visible >= expected {
			end = now
			final, _ = p.sample()
			break
		}
		if s.kind == "connector" && written.IsZero() && p.alive() {
			if m, out, ok := gate.scrape(addr); ok && out >= s.expectedRecords() {
				written = time.Now()
				cpuWritten, _ = p.sample()
				r.Metrics = m
				if off {
					// With checkpoints off only the final checkpoint that
					// SIGTERM takes makes the output visible.
					termSent = time.Now()
					p.signal(syscall.SIGTERM)
				}
			}
		}
		if off && !termSent.IsZero() && (!p.alive() || time.Since(termSent) > 15*time.Second) {
			// The final checkpoint did not commit the output: count the
			// drain up to the moment every record was written.
			b.log("%s: the final checkpoint after SIGTERM did not commit the output (%d of %d bytes visible); measuring up to the last record written", s.label, visible, expected)
			r.Note = "drain measured to the last record written: the final checkpoint on SIGTERM did not commit the output"
			end, final = written, cpuWritten
			break
		}
		if !p.alive() && !off {
			r.Err = fmt.Sprintf("exited (%v) with %d of %d bytes visible; see %s", p.err, visible, expected,
				filepath.Join(dir, "contender.log"))
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !written.IsZero() && !first.IsZero() {
		r.Written = written.Sub(first).Seconds()
		r.WrittenPerS = float64(s.topic.Records) / r.Written
	}
	if s.kind == "connector" && r.Metrics == nil {
		if m, err := scrape(addr); err == nil {
			r.Metrics = m
		}
	}
	if busyFirst == 0 {
		busyFirst, brokerFirst = busy0, broker0
	}
	b.measure(r, p, s, first, end, cpuFirst, final, busyFirst, brokerFirst, cpuBusy(), pidCPU(b.o.brokerPID))
	b.stopAndCheck(r, p, s, dir, end)
	return r
}

// measure fills the throughput and CPU figures of a drained run: first
// and end bound the drain, cpuFirst and final are the contender's usage
// then, busy* the machine's and broker* the broker's CPU time then.
func (b *bench) measure(r *result, p *proc, s spec, first, end time.Time, cpuFirst, final usage,
	busyFirst, brokerFirst, busyEnd, brokerEnd time.Duration) {
	if first.IsZero() {
		first = end
	}
	r.Startup = first.Sub(p.started).Seconds()
	r.Drain = end.Sub(first).Seconds()
	n := float64(s.topic.Records)
	if r.Drain > 0 {
		r.RecordsPerS = n / r.Drain
		r.MBPerS = n * float64(s.topic.Size) / 1e6 / r.Drain
	}
	cpu := final.CPU - cpuFirst.CPU
	r.CPU, r.CPUTotal = cpu.Seconds(), final.CPU.Seconds()
	r.CPUPerM = r.CPU / (n / 1e6)
	if r.CPU > 0 {
		r.RecPerCPU = n / r.CPU
	}
	r.PeakRSSMB = float64(final.PeakRSS) / (1 << 20)
	if b.o.brokerPID > 0 {
		r.BrokerCPU = (brokerEnd - brokerFirst).Seconds()
	}
	r.OtherCPU = max(0, (busyEnd-busyFirst).Seconds()-r.CPU-r.BrokerCPU)
}

// stopAndCheck stops the contender, reads its checkpoints from its log and
// verifies the output.
func (b *bench) stopAndCheck(r *result, p *proc, s spec, dir string, end time.Time) {
	grace := 60 * time.Second
	if s.kind == "flink" {
		grace = 20 * time.Second
	}
	if r.Note != "" {
		p.kill()
	} else if !p.stop(grace) {
		b.log("%s did not stop within %s after SIGTERM; killed", s.label, grace)
	}
	var cps []checkpointDone
	switch s.kind {
	case "connector":
		cps = connectorCheckpoints(filepath.Join(dir, "contender.log"))
	case "flink":
		cps = flinkCheckpoints(filepath.Join(dir, "contender.log.flink"))
	}
	b.checkpointStats(r, cps, end)
	if s.kind == "connector" && s.interval >= time.Hour && r.Checkpoints > 0 {
		// checkpoints "off": the only one is the final checkpoint of SIGTERM
		r.FinalCkpt = r.CkptMax
		r.Checkpoints, r.CkptP50, r.CkptP99, r.CkptMax = 0, 0, 0, 0
	}
	b.verify(r, s, dir)
}

func (b *bench) checkpointStats(r *result, cps []checkpointDone, end time.Time) {
	var ds, durable, commit []float64
	for _, c := range cps {
		if !c.at.After(end) {
			ds = append(ds, c.ms)
			durable, commit = append(durable, c.durableMs), append(commit, c.commitMs)
			if c.stateBytes > 0 {
				r.StateBytesMB = float64(c.stateBytes) / (1 << 20)
			}
		}
	}
	r.Checkpoints = len(ds)
	if len(ds) > 0 {
		slices.Sort(ds)
		r.CkptP50, r.CkptP99, r.CkptMax = percentile(ds, 50), percentile(ds, 99), ds[len(ds)-1]
		slices.Sort(durable)
		slices.Sort(commit)
		r.CkptDurableP99, r.CkptCommitP99 = percentile(durable, 99), percentile(commit, 99)
	}
}

func (b *bench) verify(r *result, s spec, dir string) {
	v, err := verify(filepath.Join(dir, "out"), s.topic.Records, s.expectedRecords(), s.kept)
	if err != nil {
		r.Verified = "verification failed: " + err.Error()
		return
	}
	r.Check = &v
	if v.Lines == 0 && r.Note != "" {
		r.Verified = "written, never committed"
	} else if v.ExactlyOnce(s.expectedRecords()) {
		r.Verified = "exactly once"
	} else {
		r.Verified = v.String()
	}
	if !b.o.keep {
		_ = os.RemoveAll(filepath.Join(dir, "out"))
		_ = os.RemoveAll(filepath.Join(dir, "data"))
		_ = os.RemoveAll(filepath.Join(dir, "checkpoints"))
	}
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

func (b *bench) finishRaw(r *result, p *proc, busy0, broker0 time.Duration, s spec) {
	if !p.wait(b.timeout(s.topic)) {
		r.Err = "raw did not finish in time"
		return
	}
	if p.err != nil {
		r.Err = fmt.Sprintf("raw: %v; see %s", p.err, r.Dir)
		return
	}
	var out struct {
		Records int64   `json:"records"`
		Bytes   int64   `json:"bytes"`
		Seconds float64 `json:"seconds"`
		First   float64 `json:"first_s"`
	}
	f, err := os.Open(filepath.Join(r.Dir, "contender.log"))
	if err == nil {
		data, _ := io.ReadAll(f)
		f.Close()
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		err = json.Unmarshal([]byte(lines[len(lines)-1]), &out)
	}
	if err != nil {
		r.Err = fmt.Sprintf("raw's result: %v", err)
		return
	}
	u := p.rusage()
	r.Startup = out.First
	r.Drain = out.Seconds - out.First
	n := float64(out.Records)
	r.RecordsPerS = n / r.Drain
	r.MBPerS = float64(out.Bytes) / 1e6 / r.Drain
	r.CPU, r.CPUTotal = u.CPU.Seconds(), u.CPU.Seconds()
	r.CPUPerM = r.CPU / (n / 1e6)
	r.RecPerCPU = n / r.CPU
	r.PeakRSSMB = float64(u.PeakRSS) / (1 << 20)
	if b.o.brokerPID > 0 {
		r.BrokerCPU = (pidCPU(b.o.brokerPID) - broker0).Seconds()
	}
	r.OtherCPU = max(0, (cpuBusy()-busy0).Seconds()-r.CPU-r.BrokerCPU)
	r.Verified = fmt.Sprintf("read %d records", out.Records)
}

// recovery starts a contender, SIGKILLs it once 40% of the output is
// committed, restarts it from its last checkpoint and measures the time
// from the restart to the first newly committed record; then it lets the
// run drain and checks that every record arrived exactly once.
func (b *bench) recovery(s spec) *result {
	dir, r, ok := b.begin(s)
	if !ok {
		return r
	}
	out := filepath.Join(dir, "out")
	expected := s.expectedBytes()
	p, _, err := b.launch(s, dir, false, "contender.log")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	deadline := time.Now().Add(b.timeout(s.topic))
	// Kill between two commits, not during one: once 40% of the output is
	// visible, wait until it has not changed for 300 ms.
	var last int64
	lastChange := time.Now()
	for {
		v, _ := outputBytes(out)
		if v != last {
			last, lastChange = v, time.Now()
		}
		if v >= expected*4/10 && time.Since(lastChange) >= 300*time.Millisecond {
			break
		}
		if !p.alive() || time.Now().After(deadline) || b.ctx.Err() != nil {
			p.kill()
			r.Err = fmt.Sprintf("did not reach 40%% of the output (%d of %d bytes visible)", v, expected)
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.kill() // SIGKILL, reaped
	killedAt, _ := outputBytes(out)
	r.KilledAtBytes = killedAt

	p2, _, err := b.launch(s, dir, true, "contender-restart.log")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p2.kill()
	var recovered time.Time
	for {
		if b.ctx.Err() != nil {
			r.Err = "interrupted"
			return r
		}
		v, _ := outputBytes(out)
		now := time.Now()
		if recovered.IsZero() && v > killedAt {
			recovered = now
			r.Recovery = now.Sub(p2.started).Seconds()
		}
		if v >= expected {
			break
		}
		if !p2.alive() {
			r.Err = fmt.Sprintf("restarted contender exited (%v); see %s", p2.err, dir)
			return r
		}
		if now.After(deadline) {
			r.Err = fmt.Sprintf("not drained after the restart: %d of %d bytes visible", v, expected)
			b.verify(r, s, dir)
			return r
		}
		time.Sleep(5 * time.Millisecond)
	}
	final, _ := p2.sample()
	r.PeakRSSMB = float64(final.PeakRSS) / (1 << 20)
	if !p2.stop(30 * time.Second) {
		b.log("%s did not stop within 30s after SIGTERM; killed", s.label)
	}
	b.verify(r, s, dir)
	return r
}

// checkpointDone is one completed checkpoint read from a log.
type checkpointDone struct {
	at         time.Time
	ms         float64
	stateBytes int64
	durableMs  float64 // connector: trigger to metadata durable (acked + persist)
	commitMs   float64 // connector: the sinks' commit
}

// connectorCheckpoints reads the "checkpoint completed" lines (zerolog
// JSON, duration in ms) of a connector's log.
func connectorCheckpoints(path string) []checkpointDone {
	return scanCheckpoints(path, func(line []byte) (checkpointDone, bool) {
		if !bytes.Contains(line, []byte(`"checkpoint completed"`)) {
			return checkpointDone{}, false
		}
		var e struct {
			Message    string  `json:"message"`
			Duration   float64 `json:"duration_ms"`
			Acked      float64 `json:"acked_ms"`
			Persist    float64 `json:"persist_ms"`
			Commit     float64 `json:"commit_ms"`
			StateBytes int64   `json:"state_bytes"`
			Time       string  `json:"time"`
		}
		if json.Unmarshal(line, &e) != nil || e.Message != "checkpoint completed" {
			return checkpointDone{}, false
		}
		at, _ := time.Parse(time.RFC3339Nano, e.Time)
		return checkpointDone{at: at, ms: e.Duration, stateBytes: e.StateBytes, durableMs: e.Acked + e.Persist, commitMs: e.Commit}, true
	})
}

// Flink's CheckpointCoordinator: "Completed checkpoint 5 for job <id>
// (12345 bytes, checkpointDuration=123 ms, finalizationTime=0 ms)."
var flinkCompleted = regexp.MustCompile(`^(\S+) .*Completed checkpoint \d+ for job \S+ \((\d+) bytes, checkpointDuration=(\d+) ms`)

func flinkCheckpoints(path string) []checkpointDone {
	return scanCheckpoints(path, func(line []byte) (checkpointDone, bool) {
		m := flinkCompleted.FindSubmatch(line)
		if m == nil {
			return checkpointDone{}, false
		}
		at, _ := time.Parse("2006-01-02T15:04:05.000Z07:00", string(m[1]))
		size, _ := strconv.ParseInt(string(m[2]), 10, 64)
		ms, _ := strconv.ParseFloat(string(m[3]), 64)
		return checkpointDone{at: at, ms: ms, stateBytes: size}, true
	})
}

// scanCheckpoints reads a log file line by line and keeps what parse
// recognises as a completed checkpoint. A missing log gives none.
func scanCheckpoints(path string, parse func(line []byte) (checkpointDone, bool)) []checkpointDone {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []checkpointDone
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if c, ok := parse(sc.Bytes()); ok {
			out = append(out, c)
		}
	}
	return out
}
