package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// produce creates the job's source topic on the real test broker when it
// is missing, sends exactly --count sample orders there, and a second run
// goes on with the next ids.
func TestProduceCreatesTheTopicAndSendsCount(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := fmt.Sprintf("produce-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
		if err == nil {
			_, _ = kadm.NewClient(cl).DeleteTopics(context.Background(), topic)
			cl.Close()
		}
	})
	path := writeFile(t, "job.yaml", fmt.Sprintf(`name: produce-test
kafka: {brokers: [%s]}
source: {topics: [%s]}
sink: {type: stdout}
`, b.Addrs[0], topic))
	for run := 1; run <= 2; run++ {
		code, out, errOut := call(t, "produce", "--config", path, "--count", "250", "--rate", "0", "--partitions", "3")
		if code != 0 || !strings.Contains(out, "produced 250 sample orders to "+topic) {
			t.Fatalf("run %d: exit %d\nstdout: %s\nstderr: %s", run, code, out, errOut)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	parts := 0
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset; parts++ })
	if total != 500 || parts != 3 {
		t.Errorf("topic holds %d records in %d partitions, want 500 in 3", total, parts)
	}
	if code, _, _ := call(t, "produce", "--config", path, "--count", "-1"); code != 2 {
		t.Errorf("--count -1: exit %d, want 2", code)
	}
}
