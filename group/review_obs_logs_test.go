package group

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/syncbuf"
)

// TestReviewObsGroupLogDurationsCarryTheirUnit: README, "Logs and the
// command line": durations in log keys carry their unit (duration_ms,
// backoff_ms). A group member's lines, from joining the group to handing
// its slots back at the stop, follow the rule: zerolog writes a duration
// as a bare number of milliseconds, so a key without its unit
// ("session_timeout": 6000 for instances.session_timeout: 6s, "took":
// 812.4) is read as seconds by whoever did not read the source.
func TestReviewObsGroupLogDurationsCarryTheirUnit(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	cfg := groupConfig(t, b, topic, t.TempDir(), 2)
	var logs syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	m := New(cfg, Options{Registry: prometheus.NewRegistry(), Log: zerolog.New(&logs).Level(zerolog.InfoLevel)})
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(logs.String(), `"message":"slot ready"`) < 2 {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the member's two slots were not ready within 60s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("member: %v", err)
	}

	// Keys the group's lines give durations under (zerolog's Dur: a bare
	// number of milliseconds).
	unitless := map[string]bool{"took": true, "waited": true, "session_timeout": true, "backoff": true}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %s", sc.Bytes())
		}
		for k, v := range ev {
			if _, num := v.(float64); num && unitless[k] {
				t.Errorf("%q: duration key %q = %v has no unit (want %s_ms): %s", ev["message"], k, v, k, sc.Bytes())
			}
		}
	}
}
