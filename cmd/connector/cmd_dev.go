package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/sink/file"
	kafkasink "github.com/connector-dev/connector/sink/kafka"
	pgsink "github.com/connector-dev/connector/sink/postgres"
	s3sink "github.com/connector-dev/connector/sink/s3"
	"github.com/connector-dev/connector/source/kafka"
)

func init() {
	register("dev", command{
		summary: "run the job of a config against an embedded broker fed with sample orders (the quick start)",
		run:     runDev,
	})
}

// runDev: connector dev [--config FILE] [--rate N] [--data DIR]
//
// It starts an in-process Kafka-protocol broker (kfake) whose data persists
// in DIR, creates the config's topics, produces sample JSON orders into them
// at --rate records/s, and runs the job against it, printing progress once a
// second until Ctrl-C. ${KAFKA_BROKERS} in the config resolves to the
// embedded broker.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dev", "[--config FILE] [--rate N] [--data DIR]", stdout, stderr)
	path := configFlag(fs)
	rate := fs.Int("rate", 20000, "sample orders produced per `second` (0: as fast as possible)")
	dataDir := fs.String("data", "./data/dev-kafka", "`dir` where the embedded broker keeps its data")
	logs := addLogFlags(fs, "warn") // dev prints its own progress: the job's info lines would drown it
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *rate < 0 {
		fmt.Fprintf(stderr, "connector dev: --rate %d: must be 0 (as fast as possible) or more\n", *rate)
		fs.Usage()
		return exitUsage
	}
	// Load once to find the topics, then start the broker and load again
	// with ${KAFKA_BROKERS} pointing at it. The first load takes a stand-in
	// address for ${KAFKA_BROKERS}, which the environment need not set.
	data, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "config: %v\n", err)
		return exitUsage
	}
	probe, err := config.Parse(*path, data, devLookup(probeBrokers))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	log, ok := logs.logger(probe, stderr)
	if !ok {
		return exitUsage
	}
	src, ok := probe.Source.Config.(*kafka.Config)
	if !ok {
		fmt.Fprintf(stderr, "connector dev: %s: source type %q: dev runs a kafka source on an embedded broker\n", *path, probe.Source.Type)
		return exitUsage
	}
	topics := src.Topics
	if out, ok := probe.Sink.Config.(*kafkasink.Config); ok && len(out.Brokers) == 0 {
		topics = append(slices.Clone(topics), out.Topic) // a Kafka-to-Kafka job writes to the embedded broker too
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(*dataDir), kfake.SeedTopics(4, topics...))
	if err != nil {
		fmt.Fprintf(stderr, "connector dev: start embedded broker: %v\n", err)
		return exitFailure
	}
	defer cluster.Close()
	// kfake seeds topics only into a fresh data dir: on one an earlier dev
	// run left (another config's), create those it lacks.
	if err := createTopics(ctx, cluster.ListenAddrs(), topics); err != nil {
		fmt.Fprintf(stderr, "connector dev: create topics on the embedded broker: %v\n", err)
		return exitFailure
	}
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	job, err := config.Parse(*path, data, devLookup(brokers))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	out := outputDir(job)
	gctx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	reg := newRegistry()
	stopProgress := func() {}
	defer func() { stopProgress() }()

	// The banner, the sample orders and the progress lines start once the
	// status server listens: a busy port is then the only line printed.
	started := func(addr string) {
		fmt.Fprintf(stdout, "connector dev: embedded broker at %s (data in %s), topics %v, job %q -> %s sink %s\n",
			brokers, *dataDir, src.Topics, job.Name, job.Sink.Type, outputName(job))
		fmt.Fprintf(stdout, "status at http://%s/ (/healthz /readyz /metrics /api/checkpoints)\n", addr)
		fmt.Fprintf(stdout, "producing sample orders at %d/s; Ctrl-C takes a final checkpoint and stops (a second Ctrl-C: at once)\n", *rate)
		go generate(gctx, cluster.ListenAddrs(), src.Topics[0], *rate, stderr)
		var lastIn, lastOut uint64 // the progress lines' counts so far, for their rates
		stopProgress = startProgress(time.Second, func() { lastIn, lastOut = printProgress(reg, job, out, stdout, lastIn, lastOut) })
	}
	if err := runJob(ctx, job, log, reg, started); err != nil {
		if configFault(err) {
			fmt.Fprintln(stderr, configFaultText(job, err))
			return exitUsage
		}
		fmt.Fprintf(stderr, "connector dev: %v%s\n", err, addrInUseHint(err))
		return exitFailure
	}
	stopProgress()
	s := read(reg)
	fmt.Fprintf(stdout, "stopped after a final checkpoint: %d records in, %d out, %d checkpoints, %s\n",
		s.count("connector_records_in_total"), s.count("connector_records_out_total"),
		s.count("connector_checkpoints_completed_total"), s.committed(job, out))
	return exitOK
}

// outputName says where the sink writes.
func outputName(job *config.Job) string {
	switch c := job.Sink.Config.(type) {
	case *file.Config:
		return c.Path
	case *kafkasink.Config:
		return "topic " + c.Topic
	case *pgsink.Config:
		return "table " + c.Table
	case *s3sink.Config:
		return fmt.Sprintf("s3://%s/%s%s/", c.Bucket, c.Prefix, job.Name)
	}
	return ""
}

// committed says what the sink committed: files, or transactions.
func (s snapshot) committed(job *config.Job, dir string) string {
	switch job.Sink.Config.(type) {
	case *kafkasink.Config, *pgsink.Config:
		return fmt.Sprintf("%d transactions committed to %s", s.count("connector_sink_transactions_committed_total"), outputName(job))
	case *s3sink.Config:
		return fmt.Sprintf("%d objects committed to %s", s.count("connector_sink_committed_files_total"), outputName(job))
	}
	return fmt.Sprintf("%d files committed in %s", committedFiles(dir), dir)
}

// outputDir is the file sink's directory, "" for another sink.
func outputDir(job *config.Job) string {
	if c, ok := job.Sink.Config.(*file.Config); ok {
		return c.Path
	}
	return ""
}

// probeBrokers stands for ${KAFKA_BROKERS} while dev reads the config to
// find its topics, before the embedded broker has an address.
const probeBrokers = "127.0.0.1:9092"

// devLookup resolves ${KAFKA_BROKERS} to brokers (the embedded broker's
// addresses), whatever the environment says, and the other variables
// from the environment.
func devLookup(brokers string) config.LookupEnv {
	return func(name string) (string, bool) {
		if name == "KAFKA_BROKERS" {
			return brokers, true
		}
		return os.LookupEnv(name)
	}
}

var (
	customers = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka"}
	statuses  = []string{"paid", "paid", "paid", "shipped", "pending", "cancelled"}
)

// generate produces sample orders with increasing ids, continuing after the
// ids already in the topic, so a restarted dev run adds new orders.
func generate(ctx context.Context, brokers []string, topic string, rate int, stderr io.Writer) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		fmt.Fprintf(stderr, "generator: %v\n", err)
		return
	}
	defer cl.Close()
	_, _ = produceOrders(ctx, cl, topic, rate, 0)
}

// produceOrders produces sample orders to topic through cl at rate records
// a second (0: as fast as possible), with ids following the records
// already in the topic, until count were sent (0: until ctx ends). It
// returns how many the brokers acknowledged: when ctx ends it sends no
// more and waits, up to flushTimeout, for those in flight, so a stopped
// producer's count is what the topic holds.
func produceOrders(ctx context.Context, cl *kgo.Client, topic string, rate int, count int64) (int64, error) {
	next := int64(0)
	if ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic); err == nil {
		ends.Each(func(o kadm.ListedOffset) { next += o.Offset })
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	// Records go out on a context the stop does not cancel: a record
	// handed to the client is delivered or fails, never dropped unsaid.
	sendCtx := context.WithoutCancel(ctx)
	var sent int64
	var acked atomic.Int64
	var failed atomic.Value
	for count == 0 || sent < count {
		select {
		case <-ctx.Done():
			return flushOrders(cl, &acked, &failed)
		case <-tick.C:
		}
		// As many as the rate allows since the start: any rate, not
		// just multiples of the ticks' 100 a second.
		n := int64(time.Since(start).Seconds()*float64(rate)) - sent
		if rate == 0 {
			n = 5000
		}
		if count > 0 {
			n = min(n, count-sent)
		}
		for range n {
			next++
			value := fmt.Appendf(nil, `{"id":%d,"customer":%q,"amount":%.2f,"status":%q,"created_at":%q,"note":"sample order"}`,
				next, customers[rand.IntN(len(customers))], rand.Float64()*500, statuses[rand.IntN(len(statuses))], time.Now().UTC().Format(time.RFC3339Nano))
			cl.Produce(sendCtx, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "%d", next), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				acked.Add(1)
			})
		}
		sent += n
		if rate == 0 {
			_ = cl.Flush(ctx)
		}
		if err, _ := failed.Load().(error); err != nil {
			return acked.Load(), err
		}
	}
	return flushOrders(cl, &acked, &failed)
}

// flushTimeout bounds the wait for produced orders at the end.
const flushTimeout = 30 * time.Second

// flushOrders waits for every order in flight and returns how many were
// acknowledged, and the first failure.
func flushOrders(cl *kgo.Client, acked *atomic.Int64, failed *atomic.Value) (int64, error) {
	fctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		return acked.Load(), fmt.Errorf("waiting for the orders in flight: %w", err)
	}
	if err, _ := failed.Load().(error); err != nil {
		return acked.Load(), err
	}
	return acked.Load(), nil
}

// startProgress calls print every period (dev: a line of records/s, the
// last completed checkpoint and what the sink committed, read from the
// job's metrics) until stop. stop returns once print has returned for the
// last time, so that a line printed after it (dev's final summary) is the
// last one.
func startProgress(every time.Duration, print func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if ctx.Err() != nil {
					return // both were ready: the stop wins
				}
				print()
			}
		}
	}()
	return func() { cancel(); <-done }
}

func printProgress(reg prometheus.Gatherer, job *config.Job, out string, w io.Writer, lastIn, lastOut uint64) (uint64, uint64) {
	s := read(reg)
	in, outN := s.count("connector_records_in_total"), s.count("connector_records_out_total")
	fmt.Fprintf(w, "in %8d rec/s  out %8d rec/s  total in %d out %d  checkpoints %d (last #%d, p99 %s)  %s\n",
		in-lastIn, outN-lastOut, in, outN, s.count("connector_checkpoints_completed_total"),
		s.count("connector_checkpoint_last_completed_id"), p99Text(s), s.committed(job, out))
	return in, outN
}

// snapshot is one reading of the job's metrics.
type snapshot struct{ metrics.Snapshot }

// read gathers reg; a collector that fails only leaves its own values out.
func read(reg prometheus.Gatherer) snapshot {
	s, _ := metrics.Gather(reg)
	return snapshot{s}
}

// count is the value of counter or gauge name, summed over its series.
func (s snapshot) count(name string) uint64 {
	v, _ := s.Sum(name)
	return uint64(v)
}

func committedFiles(dir string) int {
	if dir == "" {
		return 0
	}
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if name := e.Name(); !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") && !e.IsDir() {
			n++
		}
	}
	return n
}

// p99Text is the checkpoint duration's p99 since the start, estimated from
// the histogram's buckets, or "-" before the first checkpoint.
func p99Text(s snapshot) string {
	p99 := s.Quantile("connector_checkpoint_duration_seconds", 0.99)
	if math.IsNaN(p99) || math.IsInf(p99, 0) {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", p99*1000)
}

// addrInUseHint says what to do when the status server's port is taken.
func addrInUseHint(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return " (another process listens there: set http.addr in the config, or HTTP_ADDR, to a free host:port; port 0 picks one)"
	}
	return ""
}

// createTopics creates those of topics the embedded broker lacks, with
// kfake.SeedTopics's 4 partitions.
func createTopics(ctx context.Context, brokers, topics []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopics(ctx, 4, 1, nil, topics...)
	if err != nil {
		return err
	}
	for _, r := range res.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
