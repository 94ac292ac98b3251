package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/source"
)

// partitionsSource is a source.Source that reports a fixed lag per
// partition (only Lag is used).
type partitionsSource struct {
	source.Source
	lag []source.Lag
}

func (s partitionsSource) Lag() []source.Lag { return s.lag }

// TestInfoShowsStateLagCountersAndTheConfigWithoutSecrets: Info says
// "starting" before an attempt runs, "running" while one does and
// "restarting" after a failure; lists the running attempt's partitions
// sorted, with their lag summed; and carries the config as validate
// --print writes it, the password as ***.
func TestInfoShowsStateLagCountersAndTheConfigWithoutSecrets(t *testing.T) {
	cfg, err := config.Parse("job.yaml", []byte(`name: orders
kafka:
  brokers: [localhost:9092]
  sasl: {mechanism: SCRAM-SHA-256, username: me, password: s3cret-value}
source: {topics: [orders]}
sink: {type: stdout}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	j := New(cfg, Options{})
	if got := j.Info(); got.State != stateStarting || got.Name != "orders" || len(got.Partitions) != 0 || got.UptimeSeconds <= 0 {
		t.Errorf("before any attempt: %+v", got)
	}

	detach := j.metrics.attempt.attach(&attemptObjects{source: partitionsSource{lag: []source.Lag{
		{Topic: "orders", Partition: 2, Records: 5, Next: 10, End: 15}, {Topic: "orders", Partition: 0, Records: 7, Next: 3, End: 10}, {Topic: "audit", Partition: 1, Records: 0, Next: 4, End: 4},
	}}})
	j.health.running.Store(true)
	j.metrics.recordsIn.Add(12)
	j.metrics.recordsOut.Add(9)
	info := j.Info()
	if info.State != stateRunning || info.RecordsInTotal != 12 || info.RecordsOutTotal != 9 || info.LagRecords != 12 {
		t.Errorf("while running: state %q, in %d, out %d, lag %d; want running, 12, 9, 12",
			info.State, info.RecordsInTotal, info.RecordsOutTotal, info.LagRecords)
	}
	var order []string
	for _, p := range info.Partitions {
		order = append(order, fmt.Sprintf("%s/%d@%d-%d", p.Topic, p.Partition, p.NextOffset, p.EndOffset))
	}
	if strings.Join(order, " ") != "audit/1@4-4 orders/0@3-10 orders/2@10-15" {
		t.Errorf("partitions %v, want sorted by topic and partition, with their next and end offsets", order)
	}

	body, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "s3cret-value") || !strings.Contains(string(body), `"password":"***"`) || info.ConfigError != "" {
		t.Errorf("the config must be there with the password redacted: %s", body)
	}
	if !strings.HasPrefix(string(info.Config), `{"name":"orders","kafka":{"brokers":["localhost:9092"],`) {
		t.Errorf("the config's keys are not in the file's order: %s", info.Config)
	}
	if !strings.Contains(string(body), `"topics":["orders"]`) || !strings.Contains(string(body), `"interval":"1s"`) {
		t.Errorf("the config lacks its source topics or the default checkpoint interval: %s", body)
	}

	detach()
	j.health.running.Store(false)
	j.metrics.restarts.Inc()
	if got := j.Info(); got.State != stateRestarting || got.Restarts != 1 || len(got.Partitions) != 0 {
		t.Errorf("after a failure: state %q, restarts %d, partitions %v; want restarting, 1, none", got.State, got.Restarts, got.Partitions)
	}

	// Run stopped at once (no broker answers before the stop): stopping
	// while it ends, stopped once it returned.
	t.Chdir(t.TempDir()) // the job's directories are relative
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.Run(ctx); err != nil {
		t.Fatalf("Run after a stop: %v", err)
	}
	if got := j.Info(); got.State != stateStopped {
		t.Errorf("after Run returned: state %q, want stopped", got.State)
	}
}
