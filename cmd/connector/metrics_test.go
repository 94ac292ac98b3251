package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
)

// metricsJob is a job over a 3-partition topic on an in-process broker:
// ids 0..999 produced twice, a filter keeping amount < 50 (half the ids)
// and a dedup on id, two workers, the file sink.
const metricsJob = `
name: metrics-test
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {interval: 100ms, dir: %q}
state: {dir: %q}
pipeline:
  parallelism: 2
  transforms:
    - {type: filter, condition: {field: amount, op: lt, value: 50}}
    - {type: dedup, key: id, ttl: 10m}
sink: {type: file, path: %q, roll_on_checkpoint: true}
http: {addr: "127.0.0.1:0"}
`

const (
	metricsIDs      = 1000
	metricsProduced = 2 * metricsIDs
	metricsKept     = metricsIDs / 2 // amount = id % 100 < 50
)

// TestMetricsPassPromtoolAndReportEveryFamily runs a real job, scrapes
// /metrics once every record went through and a checkpoint completed, and
// checks the scrape with `promtool check metrics` and family by family.
func TestMetricsPassPromtoolAndReportEveryFamily(t *testing.T) {
	promtool := needPromtool(t)
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 3)
	cfg := parseTestJob(t, metricsJob, b, topic)
	produceTestOrders(t, b, topic)

	began := time.Now()
	url := serveTestJob(t, cfg) + "/metrics"

	// Wait until everything was read, processed and committed, and a
	// checkpoint completed after that.
	var body []byte
	var s metrics.Snapshot
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, s = scrape(t, url)
		// The last completed id is set last when a checkpoint completes:
		// a scrape during it may see some of its histograms observed and
		// not others (a gather reads family after family), so the checks
		// read the scrape after one that saw it.
		if sum(s, "connector_records_out_total") == metricsKept && sum(s, "connector_records_dropped_total") == metricsProduced-metricsKept &&
			sum(s, "connector_sink_committed_files_total") > 0 && len(s.Series("connector_consumer_lag_records")) == 3 &&
			sum(s, "connector_consumer_lag_records") == 0 && sum(s, "connector_checkpoint_last_completed_id") > 0 {
			body, s = scrape(t, url)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not process every record within 60s; last scrape:\n%s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nscrape:\n%s", err, out, body)
	}

	checks := []struct {
		name string
		ok   func(float64) bool
		want string
	}{
		{"connector_build_info", eq(1), "1"},
		{"connector_records_in_total", eq(metricsProduced), "every record produced"},
		{"connector_checkpoints_completed_total", gt(0), "> 0"},
		{"connector_checkpoint_duration_seconds", gt(0), "observations"},
		{"connector_checkpoint_size_bytes", gt(0), "observations"},
		{"connector_checkpoint_alignment_duration_seconds", gt(0), "observations"},
		{"connector_checkpoint_start_delay_seconds", gt(0), "observations"},
		{"connector_checkpoint_sync_duration_seconds", gt(0), "observations"},
		{"connector_checkpoint_async_duration_seconds", gt(0), "observations"},
		{"connector_checkpoint_last_completed_id", gt(0), "> 0"},
		{"connector_checkpoint_interval_seconds", eq(0.1), "0.1 (checkpoint.interval)"},
		{"connector_checkpoint_timeout_seconds", eq(60), "60 (checkpoint.timeout's default)"},
		{"connector_checkpoint_last_completed_timestamp_seconds", func(v float64) bool {
			return v >= float64(began.Unix()) && v <= float64(time.Now().Unix()+1)
		}, "a time during the test"},
		{"connector_sink_written_bytes_total", gt(0), "> 0"},
		{"connector_state_disk_usage_bytes", gt(0), "> 0"},
		{"connector_kafka_read_bytes_total", gt(0), "> 0"},
		{"go_goroutines", gt(0), "> 0"},
		{"process_resident_memory_bytes", gt(0), "> 0"},
	}
	for _, c := range checks {
		if v, ok := s.Sum(c.name); !ok || !c.ok(v) {
			t.Errorf("%s = %v (present: %v), want %s", c.name, v, ok, c.want)
		}
	}
	checkSeries(t, s)
}

// checkSeries checks the labels of the families that have some.
func checkSeries(t *testing.T, s metrics.Snapshot) {
	t.Helper()
	if info := s.Series("connector_build_info"); len(info) != 1 || info[0].Labels["version"] != version ||
		!strings.HasPrefix(info[0].Labels["goversion"], "go") {
		t.Errorf("connector_build_info: %+v", info)
	}
	if h := s["connector_checkpoint_size_bytes"].GetMetric()[0].GetHistogram(); h.GetSampleSum() <= 0 {
		t.Errorf("connector_checkpoint_size_bytes_sum = %v, want the dedup state's bytes", h.GetSampleSum())
	}
	// Every barrier reaches a worker some time after its trigger.
	if h := s["connector_checkpoint_start_delay_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleSum() <= 0 {
		t.Errorf("connector_checkpoint_start_delay_seconds_sum = %v, want the barriers' time from trigger to a worker", h.GetSampleSum())
	}
	for _, l := range s.Series("connector_consumer_lag_records") {
		if l.Labels["topic"] == "" || l.Labels["partition"] == "" {
			t.Errorf("lag series without topic or partition: %+v", l)
		}
	}
	dropped := map[string]float64{}
	for _, d := range s.Series("connector_records_dropped_total") {
		dropped[d.Labels["step"]+":"+d.Labels["transform"]] = d.Value
	}
	if want := map[string]float64{"0:filter": metricsProduced - 2*metricsKept, "1:dedup": metricsKept}; fmt.Sprint(dropped) != fmt.Sprint(want) {
		t.Errorf("records dropped by step: %v, want %v", dropped, want)
	}
	workers := map[string]bool{}
	for _, d := range s.Series("connector_state_compactions_total") {
		workers[d.Labels["worker"]] = true
	}
	if len(workers) != 2 {
		t.Errorf("state metrics for workers %v, want 0 and 1", workers)
	}
	clients := map[string]bool{}
	for _, d := range s.Series("connector_kafka_connects_total") {
		clients[d.Labels["client"]] = true
	}
	if !clients["source-0"] || !clients["source-1"] || !clients["source-admin"] {
		t.Errorf("Kafka client metrics for %v, want source-0, source-1 and source-admin", clients)
	}
}

// needPromtool returns promtool's path and fails the test without it.
func needPromtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed (%v): it checks /metrics. Install it with `apt-get install -y prometheus` "+
			"(Debian's package; only /usr/bin/promtool is needed), or run scripts/test, which does", err)
	}
	return path
}

// produceTestOrders writes ids 0..metricsIDs-1 twice, keyed by id.
func produceTestOrders(t *testing.T, b kafkatest.Brokers, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for range 2 {
		for i := range metricsIDs {
			rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, `{"id":%d,"amount":%d}`, i, i%100)})
		}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func scrape(t *testing.T, url string) ([]byte, metrics.Snapshot) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	s, err := metrics.ParseText(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape is not the text format: %v\n%s", err, body)
	}
	return body, s
}

func sum(s metrics.Snapshot, name string) float64 {
	v, _ := s.Sum(name)
	return v
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }
func gt(min float64) func(float64) bool  { return func(v float64) bool { return v > min } }
