package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestTxnsUsageAndConfigErrors(t *testing.T) {
	fileJob, _, _ := checkpointJob(t) // sink.type: stdout
	root := t.TempDir()
	kafkaJob := writeFile(t, "kafka.yaml", fmt.Sprintf(`name: orders
kafka: {brokers: [localhost:9092]}
source: {topics: [orders]}
checkpoint: {dir: %q}
sink: {type: kafka, topic: out}
`, filepath.Join(root, "checkpoints")))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"txns"}, "usage: connector txns list"},
		{[]string{"txns", "frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"txns", "list", "--config", kafkaJob, "orders-w0-t0"}, "connector txns list: takes no TXN_ID"},
		{[]string{"txns", "abort", "--config", kafkaJob}, "connector txns abort: needs a TXN_ID"},
		{[]string{"txns", "commit", "--config", kafkaJob}, "connector txns commit: needs a TXN_ID"},
		{[]string{"txns", "list", "--config", fileJob}, "sink.type is stdout: only a kafka sink has transactions"},
		{[]string{"txns", "list", "--config", "no-such.yaml"}, "no-such.yaml"},
	} {
		code, out, errOut := call(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
