// Command bench runs the benchmark of issue 5 and reports it: the connector
// against a raw franz-go consumer (the ceiling of the source side) and
// against Apache Flink, each draining the same Kafka topic from the
// beginning into files on the same disk. The Kafka-to-Kafka experiments of
// issue 12 (k2k.go, latency.go) do the same into an output topic, against
// a raw consume-and-produce loop and Flink's KafkaSink, and measure the
// latency to a read_committed consumer. bench/run builds everything and
// calls it; see bench/README.md.
//
//	bench --brokers HOST:PORT --bin DIR --flink-classpath CP [--quick] [--only a,b] [--records N] ...
//
// It produces the load with DIR/load (reused when present), runs each
// selected experiment in turn, prints a Markdown table on stdout and writes
// results.json, results.md and results.png into --out.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// experiments, in the order they run; --only takes these names.
var experimentNames = []string{
	"raw", "connector-eo", "connector-alo", "connector-off", "connector-dedup", "flink", "flink-dedup",
	"connector-dedup-repeats", "flink-dedup-repeats", "connector-group-1", "connector-group-2", "connector-group-3",
	"recovery", "scaling-p", "scaling-state",
	"raw-k2k", "connector-k2k", "flink-k2k", "raw-k2k-txn",
	"pg-copy", "connector-pg", "connector-pg-upsert", "kconnect-jdbc",
	"raw-s3", "connector-s3-jsonl", "connector-s3-parquet", "connector-file-parquet", "flink-parquet",
}

// k2kNames are the Kafka-to-Kafka experiments: a drain of each topic of
// --sizes and a latency run each. raw-k2k-txn, a diagnostic (the raw loop
// committing a transaction every second), runs only when --only names it.
var k2kNames = []string{"raw-k2k", "raw-k2k-txn", "connector-k2k", "flink-k2k"}

type options struct {
	brokers        string
	bin            string // holds load, raw, connector
	java           string
	flinkCP        string
	flinkHeap      string
	work           string // run directories (output files, logs); on the disk under test
	out            string // results
	records        int64  // records of the 100 B topic
	largeRecords   int64  // records of the 1 KB topic
	keysRecords    int64  // records of the topic for the 10M-key state run
	parallelism    int
	groupP         int // each slot's parallelism in the group contenders
	scalingP       []int
	sizes          []int
	only           map[string]bool
	keep           bool
	timeoutPerMrec time.Duration
	brokerPID      int
	brokerLogDir   string
	quietWait      time.Duration
	retries        int
	repeat         int
	// Kafka to Kafka: the latency runs' rate (records/s), measured
	// duration and warm-up after the first output.
	latencyRate     int
	latencyDuration time.Duration
	latencyWarmup   time.Duration
	noLatency       bool
	// Kafka to PostgreSQL (pg.go): the server, its postmaster's pid (for
	// its CPU time), psql, and the rows of each drain.
	pgDSN     string
	pgPID     int
	psql      string
	pgRecords []int64
	// kconnect-jdbc (pg.go): Kafka Connect's class path (Kafka's runtime
	// jars and the bench's transform) and its plugin.path (the Debezium
	// JDBC sink connector).
	kconnectCP      string
	kconnectPlugins string
	// Kafka to S3 (s3.go): the server, its credentials and pid (for its
	// CPU time); the Flink Parquet job's class path and destination.
	s3Endpoint     string
	s3AccessKey    string
	s3SecretKey    string
	s3Region       string
	s3PID          int
	flinkParquetCP string
	flinkParquetTo string
	s3RollSize     int // MiB
	// fetchesInFlight is the connector's source.fetches_in_flight; 0
	// leaves the connector's default.
	fetchesInFlight int
}

func main() {
	var o options
	var only, sizes, scalingP string
	quick := flag.Bool("quick", false, "small run for development: 500k records (1 KB topic 100k, state topic 1M)")
	flag.StringVar(&o.brokers, "brokers", os.Getenv("KAFKA_BROKERS"), "Kafka `host:port` (default $KAFKA_BROKERS)")
	flag.StringVar(&o.bin, "bin", ".cache/bench/bin", "`dir` holding the load, raw and connector binaries")
	flag.StringVar(&o.java, "java", "java", "the `java` command (17+) for Flink")
	flag.StringVar(&o.flinkCP, "flink-classpath", "", "class `path` of the Flink job (bench/flink jar and its dependencies)")
	flag.StringVar(&o.flinkHeap, "flink-heap", "1g", "Flink JVM's -Xmx")
	flag.StringVar(&o.work, "work", ".cache/bench/runs", "`dir` for the contenders' output files and logs")
	flag.StringVar(&o.out, "out", ".cache/bench/results", "`dir` for results.json, results.md and results.png")
	flag.Int64Var(&o.records, "records", 10_000_000, "records in the ~100 B topic (the issue asks for at least 5M; 10M halves the share of the last checkpoint's wait in a drain)")
	flag.Int64Var(&o.largeRecords, "large-records", 1_000_000, "records in the ~1 KB topic")
	flag.Int64Var(&o.keysRecords, "keys-records", 10_000_000, "records (and distinct keys) of the largest state-scaling run")
	flag.IntVar(&o.parallelism, "parallelism", 2, "parallelism of the connector and Flink")
	flag.IntVar(&o.groupP, "group-parallelism", 1, "connector-group-*: each slot's pipeline.parallelism (a slot holds one partition of the load's topics)")
	flag.StringVar(&scalingP, "scaling-parallelism", "1,2,4", "parallelisms of the scaling run")
	flag.StringVar(&sizes, "sizes", "100,1000", "record sizes of the drain runs: 100 and/or 1000")
	flag.StringVar(&only, "only", "", "comma-separated experiments to run (default all): "+strings.Join(experimentNames, ","))
	flag.BoolVar(&o.keep, "keep", false, "keep each run's output files (deleted after verification otherwise)")
	flag.DurationVar(&o.timeoutPerMrec, "timeout-per-million", 120*time.Second, "give up on a contender after this long per million records (plus 60s)")
	flag.IntVar(&o.brokerPID, "broker-pid", 0, "pid of the Kafka broker, to report its CPU time (optional)")
	flag.StringVar(&o.brokerLogDir, "broker-log-dir", "", "the broker's log `dir` (on this machine), to read each run's topic into the page cache before the run (optional)")
	flag.DurationVar(&o.quietWait, "quiet-wait", 3*time.Minute, "before each run, wait up to this long for the machine to be quiet (other processes using < 0.15 cores for 3s); 0: do not wait")
	flag.IntVar(&o.retries, "retries", 2, "run a drain again, up to this many times, when other processes used more than 0.25 cores during it (the least disturbed run is kept)")
	flag.IntVar(&o.repeat, "repeat", 3, "runs of every experiment; the median one is reported (by records/s, or by recovery time), with the range")
	flag.IntVar(&o.latencyRate, "latency-rate", 50_000, "k2k latency runs: records produced per second")
	flag.DurationVar(&o.latencyDuration, "latency-duration", 30*time.Second, "k2k latency runs: how long the measured records are produced")
	flag.DurationVar(&o.latencyWarmup, "latency-warmup", 5*time.Second, "k2k latency runs: records produced in this long after the contender's first output are not measured")
	flag.BoolVar(&o.noLatency, "no-latency", false, "k2k: run the drains only, not the latency runs")
	flag.StringVar(&o.pgDSN, "pg-dsn", os.Getenv("BENCH_PG_DSN"), "PostgreSQL experiments: the server's `DSN` (a superuser's; default $BENCH_PG_DSN)")
	flag.IntVar(&o.pgPID, "pg-pid", 0, "PostgreSQL experiments: the `pid` of the server's postmaster, to measure the database's CPU")
	flag.StringVar(&o.psql, "psql", "psql", "PostgreSQL experiments: the `psql` command of pg-copy")
	flag.StringVar(&o.kconnectCP, "kconnect-classpath", "", "kconnect-jdbc: class `path` of the Kafka Connect worker (Kafka's jars and bench/kconnect's transform)")
	flag.StringVar(&o.kconnectPlugins, "kconnect-plugins", "", "kconnect-jdbc: the worker's plugin.path (`dir` holding the Debezium JDBC sink connector)")
	flag.StringVar(&o.s3Endpoint, "s3-endpoint", os.Getenv("S3_ENDPOINT"), "S3 experiments: the S3 server, http://`host:port` (default $S3_ENDPOINT)")
	flag.StringVar(&o.s3AccessKey, "s3-access-key", os.Getenv("S3_ACCESS_KEY"), "S3 experiments: access key id (default $S3_ACCESS_KEY)")
	flag.StringVar(&o.s3SecretKey, "s3-secret-key", os.Getenv("S3_SECRET_KEY"), "S3 experiments: secret access key (default $S3_SECRET_KEY)")
	flag.StringVar(&o.s3Region, "s3-region", cmp.Or(os.Getenv("S3_REGION"), "us-east-1"), "S3 experiments: the region (default $S3_REGION, else us-east-1)")
	flag.IntVar(&o.s3PID, "s3-pid", 0, "S3 experiments: the `pid` of the S3 server, to measure its CPU")
	flag.StringVar(&o.flinkParquetCP, "flink-parquet-classpath", "", "flink-parquet: class `path` of the Flink Parquet job (bench/flink jar and its dependencies with flink-parquet and flink-s3-fs-hadoop)")
	flag.IntVar(&o.s3RollSize, "s3-roll-size-mib", 128, "S3 experiments: the connector's roll_size (s3 and file sinks) and raw-s3's object size, in MiB")
	flag.IntVar(&o.fetchesInFlight, "fetches-in-flight", 0, "the connector's source.fetches_in_flight (0: the connector's default)")
	flag.StringVar(&o.flinkParquetTo, "flink-parquet-to", "s3", "flink-parquet: write to s3 (the bucket, through flink-s3-fs-hadoop) or local (files)")
	pgRecords := flag.String("pg-records", "5000000", "PostgreSQL experiments: rows of each drain (a topic each)")
	from := flag.String("from", "", "run nothing: report the results.json `file` of an earlier run again")
	flag.Parse()

	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		if !set["records"] {
			o.records = 500_000
		}
		if !set["large-records"] {
			o.largeRecords = 100_000
		}
		if !set["keys-records"] {
			o.keysRecords = 1_000_000
		}
		if !set["repeat"] {
			o.repeat = 1
		}
		if !set["latency-duration"] {
			o.latencyDuration = 10 * time.Second
		}
		if !set["pg-records"] {
			*pgRecords = "200000"
		}
	}
	o.repeat = max(1, o.repeat)
	if *from != "" {
		b := &bench{o: o, began: time.Now()}
		data, err := os.ReadFile(*from)
		if err == nil {
			err = json.Unmarshal(data, &b.results)
		}
		if err == nil {
			err = os.MkdirAll(o.out, 0o755)
		}
		if err == nil {
			err = b.report()
		}
		if err != nil {
			fatal(err)
		}
		return
	}
	if o.brokers == "" {
		fatal(errors.New("--brokers or KAFKA_BROKERS is required"))
	}
	o.only = map[string]bool{}
	for n := range strings.SplitSeq(only, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !slices.Contains(experimentNames, n) {
			fatal(fmt.Errorf("--only: unknown experiment %q (want some of %s)", n, strings.Join(experimentNames, ",")))
		}
		o.only[n] = true
	}
	if o.groupP < 1 {
		fatal(fmt.Errorf("--group-parallelism: %d is not a positive number", o.groupP))
	}
	if o.s3RollSize < 5 {
		fatal(fmt.Errorf("--s3-roll-size-mib: %d is less than S3's least part size (5)", o.s3RollSize))
	}
	if o.fetchesInFlight < 0 {
		fatal(fmt.Errorf("--fetches-in-flight: %d is negative", o.fetchesInFlight))
	}
	if o.flinkParquetTo != "s3" && o.flinkParquetTo != "local" {
		fatal(fmt.Errorf("--flink-parquet-to: %q is neither s3 nor local", o.flinkParquetTo))
	}
	var err error
	if o.sizes, err = ints(sizes); err != nil {
		fatal(fmt.Errorf("--sizes: %w", err))
	}
	if o.scalingP, err = ints(scalingP); err != nil {
		fatal(fmt.Errorf("--scaling-parallelism: %w", err))
	}
	pgRows, err := ints(*pgRecords)
	if err != nil {
		fatal(fmt.Errorf("--pg-records: %w", err))
	}
	for _, n := range pgRows {
		o.pgRecords = append(o.pgRecords, int64(n))
	}
	for _, d := range []*string{&o.bin, &o.work, &o.out} {
		if *d, err = filepath.Abs(*d); err != nil {
			fatal(err)
		}
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		fatal(err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{o: o, ctx: ctx, began: time.Now()}
	if err := b.run(); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "bench: %v\n", err)
	os.Exit(1)
}

func ints(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func (o *options) wants(name string) bool {
	if name == "raw-k2k-txn" || slices.Contains(pgNames, name) || slices.Contains(s3Names, name) || slices.Contains(groupNames, name) {
		return o.only[name] // only when named
	}
	return len(o.only) == 0 || o.only[name]
}

// topic is a topic of the load.
type topic struct {
	Name    string `json:"name"`
	Records int64  `json:"records"`
	Size    int    `json:"size"` // bytes per value; output lines are Size+1 bytes
}

func (t topic) outputBytes() int64 { return t.Records * int64(t.Size+1) }

type bench struct {
	o       options
	ctx     context.Context
	began   time.Time
	results []*result
	k2kState
	pgState
	s3State
}

func (b *bench) log(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench %6.1fs: %s\n", time.Since(b.began).Seconds(), fmt.Sprintf(format, args...))
}

// load makes sure the topic of n records of size bytes exists (DIR/load);
// its name starts with prefix.
func (b *bench) load(n int64, size int, prefix string) (topic, error) {
	return b.loadLayout(n, size, prefix, "orders")
}

// loadLayout is load with the values of layout (bench/cmd/load --layout).
func (b *bench) loadLayout(n int64, size int, prefix, layout string) (topic, error) {
	cmd := exec.CommandContext(b.ctx, filepath.Join(b.o.bin, "load"), "--brokers", b.o.brokers,
		"--records", strconv.FormatInt(n, 10), "--size", strconv.Itoa(size), "--prefix", prefix, "--layout", layout)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return topic{}, fmt.Errorf("load %d records of %d B: %w", n, size, err)
	}
	return topic{Name: strings.TrimSpace(string(out)), Records: n, Size: size}, nil
}

func (b *bench) run() error {
	o := &b.o
	drains := []string{"raw", "connector-eo", "connector-group-1", "connector-group-2", "connector-group-3",
		"connector-alo", "connector-off", "connector-dedup", "flink", "flink-dedup", "connector-dedup-repeats", "flink-dedup-repeats"}
	needMain := o.wants("recovery") || o.wants("scaling-p") || o.wants("scaling-state")
	needLarge := false
	for _, n := range drains {
		if o.wants(n) {
			needMain = needMain || slices.Contains(o.sizes, 100)
			needLarge = needLarge || slices.Contains(o.sizes, 1000)
		}
	}
	var main, large, keys topic
	var err error
	if needMain {
		if main, err = b.load(o.records, 100, "bench"); err != nil {
			return err
		}
	}
	if needLarge {
		if large, err = b.load(o.largeRecords, 1000, "bench"); err != nil {
			return err
		}
	}
	if o.wants("scaling-state") {
		if keys, err = b.load(o.keysRecords, 100, "bench"); err != nil {
			return err
		}
	}
	b.log("load ready: %s %s %s", main.Name, large.Name, keys.Name)

	P := o.parallelism
	for _, size := range o.sizes {
		t := main
		if size == 1000 {
			t = large
		}
		if t.Name == "" {
			continue
		}
		section := fmt.Sprintf("drain %s x %s B", human(float64(t.Records)), strconv.Itoa(t.Size))
		var specs []spec
		for _, name := range drains {
			if !o.wants(name) {
				continue
			}
			s := spec{section: section, name: name, topic: t, parallelism: P}
			switch name {
			case "raw":
				s.kind, s.label = "raw", "raw franz-go (read, discard)"
			case "connector-eo":
				s.kind, s.label, s.mode, s.interval = "connector", "connector exactly-once 1s", "exactly_once", time.Second
			case "connector-group-1", "connector-group-2", "connector-group-3":
				n, _ := strconv.Atoi(strings.TrimPrefix(name, "connector-group-"))
				s.kind, s.mode, s.interval, s.processes, s.parallelism = "connector", "exactly_once", time.Second, n, o.groupP
				s.label = fmt.Sprintf("connector EO 1s, group mode, %s (%d slots)", plural(n, "process", "processes"), groupSlots)
			case "connector-alo":
				s.kind, s.label, s.mode, s.interval = "connector", "connector at-least-once 1s", "at_least_once", time.Second
			case "connector-off":
				s.kind, s.label, s.mode, s.interval = "connector", "connector checkpoints off (1h)", "exactly_once", time.Hour
			case "connector-dedup":
				key, distinct := "u", min(t.Records, 1_000_000)
				s.kind, s.mode, s.interval, s.dedupKey = "connector", "exactly_once", time.Second, key
				s.label = fmt.Sprintf("connector EO + dedup (%s keys)", human(float64(distinct)))
				s.keys = distinct
			case "flink":
				s.kind, s.label, s.interval = "flink", "Flink 2.2 exactly-once 1s", time.Second
			case "flink-dedup":
				distinct := min(t.Records, 1_000_000)
				s.kind, s.interval, s.dedupKey, s.keys = "flink", time.Second, "u", distinct
				s.label = fmt.Sprintf("Flink 2.2 EO + dedup (RocksDB, %s keys)", human(float64(distinct)))
			case "connector-dedup-repeats", "flink-dedup-repeats":
				// 100k keys (h), each record of a key 100 s after the one
				// before: a TTL of 9 of those keeps one record in 9.
				s.interval, s.dedupKey, s.keys, s.keepEvery = time.Second, "h", min(t.Records, 100_000), 9
				if t.Records%s.keys != 0 || (t.Records/s.keys-1)%s.keepEvery != 0 {
					// The drain ends when the output is whole: the topic's
					// last records, of every partition, must be kept, or
					// its end is not measured. A whole last block of
					// keys is.
					b.log("%s: skipped: the last records of %d are repeats (it needs records a multiple of 100000 and records/100000-1 of 9, as 10M)", name, t.Records)
					continue
				}
				who := "connector EO"
				s.kind, s.mode = "connector", "exactly_once"
				if name == "flink-dedup-repeats" {
					s.kind, s.mode, who = "flink", "", "Flink 2.2 EO"
				}
				s.label = fmt.Sprintf("%s + dedup, 8 of 9 records repeats (%s keys)", who, human(float64(s.keys)))
			}
			specs = append(specs, s)
		}
		for _, r := range b.rounds(specs, b.steadyDrain) {
			b.record(r)
		}
	}

	if err := b.runK2K(); err != nil {
		return err
	}
	if err := b.runPG(); err != nil {
		return err
	}
	if err := b.runS3(); err != nil {
		return err
	}

	if o.wants("recovery") {
		for _, kind := range []string{"connector", "flink"} {
			s := spec{section: "recovery", name: kind + "-recovery", kind: kind, topic: main, parallelism: P,
				mode: "exactly_once", interval: time.Second}
			s.label = map[string]string{"connector": "connector exactly-once", "flink": "Flink 2.2 exactly-once"}[kind]
			b.record(b.repeated(s, b.recovery))
		}
	}

	if o.wants("scaling-p") {
		for _, p := range o.scalingP {
			if prev := b.find(fmt.Sprintf("drain %s x 100 B", human(float64(main.Records))), "connector-eo"); p == P && prev != nil && prev.Err == "" {
				r := *prev
				r.Section, r.Label = "scaling-p", fmt.Sprintf("connector EO, parallelism %d", p)
				b.record(&r)
				continue
			}
			s := spec{section: "scaling-p", name: "connector-eo", kind: "connector", topic: main, parallelism: p,
				mode: "exactly_once", interval: time.Second, label: fmt.Sprintf("connector EO, parallelism %d", p)}
			b.record(b.repeated(s, b.steadyDrain))
		}
	}

	if o.wants("scaling-state") {
		runs := []struct {
			t    topic
			key  string
			keys int64
		}{
			{main, "h", min(main.Records, 100_000)},
			{main, "u", min(main.Records, 1_000_000)},
			{keys, "id", keys.Records},
		}
		for _, r := range runs {
			label := fmt.Sprintf("dedup, %s keys", human(float64(r.keys)))
			if r.key == "id" {
				label = fmt.Sprintf("dedup, 0->%s keys", human(float64(r.keys)))
			}
			if prev := b.find(fmt.Sprintf("drain %s x 100 B", human(float64(main.Records))), "connector-dedup"); r.key == "u" && prev != nil && prev.Err == "" {
				c := *prev
				c.Section, c.Label = "scaling-state", label
				b.record(&c)
				continue
			}
			s := spec{section: "scaling-state", name: "connector-dedup-" + r.key, kind: "connector", topic: r.t,
				parallelism: P, mode: "exactly_once", interval: time.Second, dedupKey: r.key, keys: r.keys, label: label}
			b.record(b.repeated(s, b.steadyDrain))
		}
	}

	return b.report()
}

// waitQuiet waits until the processes other than the broker use less than
// 0.15 cores over 3 s, at most --quiet-wait: benchmarks on a shared machine
// (tests running beside them) measure the neighbours too.
func (b *bench) waitQuiet() {
	if b.o.quietWait <= 0 {
		return
	}
	const window = 3 * time.Second
	began := time.Now()
	for {
		busy0, broker0 := cpuBusy(), pidCPU(b.o.brokerPID)
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(window):
		}
		other := (cpuBusy() - busy0) - (pidCPU(b.o.brokerPID) - broker0)
		cores := other.Seconds() / window.Seconds()
		if cores < 0.15 {
			if waited := time.Since(began); waited > window+time.Second {
				b.log("machine quiet after %.0fs", waited.Seconds())
			}
			return
		}
		if time.Since(began) > b.o.quietWait {
			b.log("machine still busy (%.2f cores used by other processes) after %s; running anyway", cores, b.o.quietWait)
			return
		}
		if time.Since(began) < window+time.Second {
			b.log("machine busy (%.2f cores used by other processes); waiting up to %s for it to be quiet", cores, b.o.quietWait)
		}
	}
}

// disturbed is how many cores other processes (not the contender, not the
// broker) used on average during a drain above which it is run again.
const disturbed = 0.25

// steadyDrain runs a drain, and again (up to --retries times) while other
// processes used more than 0.25 cores during it; it keeps the least
// disturbed run.
func (b *bench) steadyDrain(s spec) *result {
	var best *result
	for attempt := 1; ; attempt++ {
		r := b.drain(s)
		r.Attempts = attempt
		if r.Err != "" {
			if best != nil {
				return best
			}
			return r
		}
		if best == nil || r.otherCores() < best.otherCores() {
			best = r
		}
		if r.otherCores() <= disturbed || attempt > b.o.retries || b.ctx.Err() != nil {
			best.Attempts = attempt
			return best
		}
		b.log("%s / %s: disturbed (other processes used %.2f cores during the drain); running it again", s.section, s.label, r.otherCores())
	}
}

// repeated runs an experiment --repeat times and returns the median run
// (by records/s, or by recovery time for recovery runs), with the range of
// that figure over the runs.
func (b *bench) repeated(s spec, run func(spec) *result) *result {
	return b.rounds([]spec{s}, run)[0]
}

// rounds runs each of specs once per round, --repeat rounds, and returns
// each one's median run (see repeated). Contenders take turns so that a
// drift of the machine during the section (the page cache holding the
// topic or the last run's output, the disk's background write-back) spreads
// over all of them instead of landing on the ones that run last.
func (b *bench) rounds(specs []spec, run func(spec) *result) []*result {
	runs := make([][]*result, len(specs))
	for i := range b.o.repeat {
		if i > 0 && b.ctx.Err() != nil {
			break // every experiment ran at least once
		}
		for j, s := range specs {
			if b.o.repeat > 1 {
				b.log("%s / %s: run %d of %d", s.section, s.label, i+1, b.o.repeat)
			}
			r := run(s)
			if r.Err == "" && b.o.repeat > 1 {
				b.log("%s / %s: run %d: %s", s.section, s.label, i+1, r.summary())
			}
			runs[j] = append(runs[j], r)
		}
	}
	out := make([]*result, len(specs))
	for j, s := range specs {
		out[j] = b.median(s, runs[j])
	}
	return out
}

// median summarises one experiment's runs.
func (b *bench) median(s spec, runs []*result) *result {
	var ok []*result
	var failed *result
	for _, r := range runs {
		if r.Err != "" {
			failed = r
		} else {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return failed
	}
	key := func(r *result) float64 { return r.RecordsPerS }
	switch s.section {
	case "recovery":
		key = func(r *result) float64 { return r.Recovery }
	case k2kLatencySection:
		key = func(r *result) float64 { return r.LatP99 }
	}
	slices.SortFunc(ok, func(x, y *result) int { return cmp.Compare(key(x), key(y)) })
	m := ok[(len(ok)-1)/2]
	// The output check of every run counts, not only the median's.
	var bad []string
	for _, r := range ok {
		want := r.Topic.Records
		if s.keepEvery > 0 {
			want = s.expectedRecords() // a dedup of repeats drops some
		}
		if r.Check != nil && !r.Check.ExactlyOnce(want) && r.Note == "" {
			bad = append(bad, "a run: "+r.Verified)
		}
	}
	if len(bad) > 0 {
		m.Verified = strings.Join(bad, "; ")
	} else if m.Check != nil && len(ok) > 1 {
		m.Verified = fmt.Sprintf("exactly once (%d of %d runs)", len(ok), len(ok))
		if m.Isolation == "read_uncommitted" {
			m.Verified += " (read_uncommitted)"
		}
	}
	m.Runs = len(ok)
	m.RangeMin, m.RangeMax = key(ok[0]), key(ok[len(ok)-1])
	if failed != nil {
		m.Note = strings.TrimSpace(m.Note + " one run failed: " + failed.Err)
	}
	return m
}

func (b *bench) find(section, name string) *result {
	for _, r := range b.results {
		if r.Section == section && r.Name == name {
			return r
		}
	}
	return nil
}

func (b *bench) record(r *result) {
	if b.ctx.Err() != nil {
		return // interrupted: what ran so far is reported
	}
	b.results = append(b.results, r)
	if r.Err != "" {
		b.log("%s / %s: FAILED: %s", r.Section, r.Label, r.Err)
	} else {
		b.log("%s / %s: %s", r.Section, r.Label, r.summary())
	}
	// Written after every run, so that an interrupted bench leaves what it measured.
	if data, err := json.MarshalIndent(b.results, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(b.o.out, "results.json"), data, 0o644)
	}
}

// k2kLatencySection is the section of the Kafka-to-Kafka latency runs.
const k2kLatencySection = "k2k latency"

// runK2K runs the Kafka-to-Kafka experiments: the drains of each topic of
// --sizes (their own topics, named bench-k2k-v2-...), contenders taking
// turns, then the latency runs.
func (b *bench) runK2K() error {
	o := &b.o
	var names []string
	for _, n := range k2kNames {
		if o.wants(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	labels := map[string]string{
		"raw-k2k":       "raw franz-go loop (no transactions)",
		"raw-k2k-txn":   "raw loop + a transaction a second",
		"connector-k2k": "connector exactly-once 1s",
		"flink-k2k":     "Flink 2.2 exactly-once 1s",
	}
	kinds := map[string]string{"raw-k2k": "raw", "raw-k2k-txn": "raw", "connector-k2k": "connector", "flink-k2k": "flink"}
	mk := func(section, name string, t topic) spec {
		return spec{section: section, name: name, label: labels[name], kind: kinds[name], topic: t,
			parallelism: o.parallelism, mode: "exactly_once", interval: time.Second, k2k: true, txn: name == "raw-k2k-txn"}
	}
	for _, size := range o.sizes {
		n := o.records
		if size == 1000 {
			n = o.largeRecords
		}
		t, err := b.load(n, size, k2kPrefix)
		if err != nil {
			return err
		}
		section := fmt.Sprintf("k2k drain %s x %d B", human(float64(t.Records)), t.Size)
		var specs []spec
		for _, name := range names {
			specs = append(specs, mk(section, name, t))
		}
		for _, r := range b.rounds(specs, b.steadyDrain) {
			b.record(r)
		}
	}
	if o.noLatency {
		return nil
	}
	var specs []spec
	for _, name := range names {
		specs = append(specs, mk(k2kLatencySection, name, topic{}))
	}
	for _, r := range b.rounds(specs, b.k2kLatency) {
		b.record(r)
	}
	return nil
}
