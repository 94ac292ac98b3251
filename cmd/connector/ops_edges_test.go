package main

// Tests of the operational surface (checkpoints, txns, produce): each pins
// a problem a review found, and fails on the code before its fix.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// restartingJob is a job whose every attempt fails (a record that is not
// JSON reaches a dedup, on_decode_error fail): after its first failure it
// waits out restart.initial_backoff (verb 6) before the next attempt.
const restartingJob = `name: ops-edges
kafka: {brokers: [%q]}
source: {topics: [%q], start_offset: earliest}
checkpoint: {interval: 100ms, dir: %q}
state: {dir: %q}
pipeline:
  transforms:
    - {type: dedup, key: id, ttl: 1m}
sink: {type: file, path: %q}
http: {addr: "127.0.0.1:0"}
restart: {initial_backoff: %s, max_backoff: 1h, max_failures: 5}
log: {level: error}
`

// opsJobEnv makes the test binary, re-executed with
// -test.run=^TestOpsJobProcessHelper$, run the job of the config it
// names as `connector run` does (runJob), in a process of its own (file
// locks are per process), printing its HTTP address on stdout, and exit
// with run's codes (0, or 1 when the job failed).
const opsJobEnv = "OPS_EDGES_JOB"

func TestOpsJobProcessHelper(t *testing.T) {
	path := os.Getenv(opsJobEnv)
	if path == "" {
		return // only a helper
	}
	cfg, ok := loadJob(path, os.Stderr)
	if !ok {
		os.Exit(exitUsage)
	}
	ctx, stop := stopOnSignal()
	defer stop()
	err := runJob(ctx, cfg, zerolog.New(os.Stderr).Level(zerolog.ErrorLevel), newRegistry(), func(a string) { fmt.Println(a) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "job failed:", err)
		os.Exit(exitFailure)
	}
	os.Exit(exitOK)
}

// startRestartingJob writes restartingJob with backoff, runs it in a
// process of its own as `connector run` does, and waits until it has
// failed once and waits to restart (/api/job says "restarting": its
// attempt, and the checkpoint store it opened, are closed). It returns the
// config's path, the job's base URL and a channel that gets the process's
// exit (Wait's error) and its stderr.
func startRestartingJob(t *testing.T, backoff string) (path, base string, exited chan error, stderr *strings.Builder) {
	t.Helper()
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("not json")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	dir := t.TempDir()
	path = writeFile(t, "job.yaml", fmt.Sprintf(restartingJob, b.Addrs[0], topic,
		filepath.Join(dir, "chk"), filepath.Join(dir, "state"), filepath.Join(dir, "out"), backoff))
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpsJobProcessHelper$")
	cmd.Env = append(os.Environ(), opsJobEnv+"="+path)
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	line, _ := bufio.NewReader(out).ReadString('\n')
	ended := make(chan struct{})
	go func() { err := cmd.Wait(); close(ended); exited <- err }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	if line == "" {
		err := <-exited
		t.Fatalf("the job's process ended before it served HTTP: %v\n%s", err, stderr)
	}
	base = "http://" + strings.TrimSpace(line)
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := jobState(base)
		if info.State == "restarting" && info.Restarts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not fail and wait to restart within 30s (state %q, restarts %d)", info.State, info.Restarts)
		}
		time.Sleep(20 * time.Millisecond) // polling /api/job
	}
	return path, base, exited, stderr
}

type jobStateInfo struct {
	State    string `json:"state"`
	Restarts int64  `json:"restarts"`
}

func jobState(base string) (info jobStateInfo) {
	resp, err := http.Get(base + "/api/job")
	if err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
	}
	return info
}

// While a job's process waits to restart after a failure (restart
// backoff), its pipeline has closed the checkpoint store, so its lock is
// free: `checkpoints list` (and `txns list|abort|commit`, through the same
// openStoreFor) took it and acted as on a stopped job, although the
// process runs; and a command holding the store when the next attempt
// opened it made that attempt fail for good (ErrLocked is permanent): the
// job exited 1. The commands now take the process's mode lock (held for
// its whole life) shared, and refuse.
func TestOpsCheckpointsListRefusesAJobWaitingToRestart(t *testing.T) {
	path, _, _, _ := startRestartingJob(t, "1h")
	code, out, errOut := call(t, "checkpoints", "list", "--config", path)
	if code != exitFailure || !strings.Contains(errOut, "running") {
		t.Errorf("checkpoints list of a running job (waiting to restart): exit %d, want 1 and a message that the job runs\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// `connector produce --rate N` sends N orders a second, says its flag
// ("sample orders per second"): produceOrders sent max(1, rate/100)
// orders every 10ms tick, so any --rate from 1 to 199 sent 100 a second
// (--rate 10: ten times too fast) and 250 sent 200. 30 orders at --rate 10
// must take about 3s; they took 0.3s.
func TestOpsProduceRateIsOrdersPerSecond(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 1)
	path := writeFile(t, "job.yaml", fmt.Sprintf(`name: produce-rate
kafka: {brokers: [%s]}
source: {topics: [%s]}
sink: {type: stdout}
`, b.Addrs[0], topic))
	start := time.Now()
	code, out, errOut := call(t, "produce", "--config", path, "--rate", "10", "--count", "30")
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "produced 30 sample orders") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if took < 2500*time.Millisecond { // a lower bound: slower is never faster than asked
		t.Errorf("--rate 10 --count 30 took %v: %.0f orders a second, want at most 10 (about 3s)", took.Round(time.Millisecond), 30/took.Seconds())
	}
}
