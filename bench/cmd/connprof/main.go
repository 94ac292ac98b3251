// Command connprof runs one connector job in process, exactly as
// `connector run` does (pipeline.New and Job.Run on the same config), under
// the Go profilers, until it has written --records records; then it stops
// the job (final checkpoint) and writes the profiles. It is how the bench's
// hot spots are found without touching cmd/ or the runtime:
//
//	connprof --config FILE --records N --cpuprofile cpu.out [--memprofile mem.out] [--heapprofile heap.out]
//	         [--mutexprofile m.out] [--blockprofile b.out] [--trace trace.out]
//	go tool pprof -top -nodecount 40 cpu.out
//	go tool trace -pprof=sched trace.out > sched.pprof   # time runnable goroutines waited for a P
//
// bench/profile writes a config for the exactly-once contender, runs this and
// prints the top of each profile.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	_ "github.com/connector-dev/connector/internal/builtin" // every source and sink kind, as cmd/connector
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/pipeline"
)

func main() {
	cfgPath := flag.String("config", "", "job config `file`")
	records := flag.Uint64("records", 0, "stop once this many `records` were written to the sink")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to `file`")
	memProfile := flag.String("memprofile", "", "write an allocation profile to `file`")
	mutexProfile := flag.String("mutexprofile", "", "write a mutex contention profile to `file`")
	blockProfile := flag.String("blockprofile", "", "write a blocking profile to `file`")
	heapProfile := flag.String("heapprofile", "", "write a heap profile (in use) to `file` when half the records are written")
	traceFile := flag.String("trace", "", "write an execution trace (go tool trace) of the run to `file`")
	flag.Parse()
	if *cfgPath == "" || *records == 0 {
		fmt.Fprintln(os.Stderr, "connprof: --config and --records are required")
		os.Exit(2)
	}
	if err := run(*cfgPath, *records, *cpuProfile, *memProfile, *heapProfile, *mutexProfile, *blockProfile, *traceFile); err != nil {
		fmt.Fprintf(os.Stderr, "connprof: %v\n", err)
		os.Exit(1)
	}
}

func run(cfgPath string, records uint64, cpuProfile, memProfile, heapProfile, mutexProfile, blockProfile, traceFile string) error {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	if mutexProfile != "" {
		runtime.SetMutexProfileFraction(5)
	}
	if blockProfile != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	}
	if memProfile != "" || heapProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.New(os.Stderr).Level(zerolog.InfoLevel).With().Timestamp().Logger()
	reg := prometheus.NewRegistry() // the job's metrics only
	job := pipeline.New(cfg, pipeline.Options{Registry: reg, Log: log})
	var peak peaks
	out := func() uint64 {
		s, _ := metrics.Gather(reg)
		n, _ := s.Sum("connector_records_out_total")
		peak.observe(s)
		return uint64(n)
	}

	for _, rec := range []struct {
		path  string
		start func(io.Writer) error
		stop  func()
	}{{cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile}, {traceFile, trace.Start, trace.Stop}} {
		if rec.path == "" {
			continue
		}
		f, err := os.Create(rec.path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := rec.start(f); err != nil {
			return err
		}
		defer rec.stop()
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- job.Run(ctx) }()
	var cpu0 time.Duration
	for n := uint64(0); n < records; n = out() {
		select {
		case err := <-done:
			return fmt.Errorf("job ended after %d records: %v", n, err)
		case <-time.After(pollEvery):
		}
		if cpu0 == 0 && n > 0 {
			cpu0 = cpuTime()
		}
		if heapProfile != "" && n >= records/2 {
			if err := writeHeap(heapProfile); err != nil {
				return err
			}
			heapProfile = ""
		}
	}
	took := time.Since(began)
	cpu := cpuTime() - cpu0
	stop()
	if err := <-done; err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	n := out()
	fmt.Fprintf(os.Stderr, "connprof: %d records written in %.2fs (%.0f records/s), %.2f CPU s after the first record (%.2f CPU s per million)\n",
		n, took.Seconds(), float64(n)/took.Seconds(), cpu.Seconds(), cpu.Seconds()/(float64(n)/1e6))
	peak.print(os.Stderr)

	write := func(name, path string) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup(name).WriteTo(f, 0)
	}
	if err := write("allocs", memProfile); err != nil {
		return err
	}
	if err := write("mutex", mutexProfile); err != nil {
		return err
	}
	return write("block", blockProfile)
}

// pollEvery is how often the records written are read from the job's
// metrics. Each reading gathers the whole registry (Pebble's metrics
// included), so it is kept out of the profiles by not reading too often.
const pollEvery = 50 * time.Millisecond

// writeHeap writes the in-use heap profile, with the runtime's view of
// the process's memory in the log.
func writeHeap(path string) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "connprof: heap in use %.0f MiB, heap sys %.0f MiB, stacks %.0f MiB, other sys %.0f MiB, total sys %.0f MiB, GC cycles %d\n",
		float64(ms.HeapInuse)/(1<<20), float64(ms.HeapSys)/(1<<20), float64(ms.StackSys)/(1<<20),
		float64(ms.OtherSys+ms.GCSys+ms.MSpanSys+ms.MCacheSys+ms.BuckHashSys)/(1<<20), float64(ms.Sys)/(1<<20), ms.NumGC)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("heap").WriteTo(f, 0)
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
