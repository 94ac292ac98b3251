package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestRunNamesTheLineOfAKeyFoundWrongOnlyAtStart: a config that validates
// but names an output topic the cluster does not have is a bad config
// found at start: exit 2, and the problem printed at sink.topic's line,
// as validate prints the problems it finds.
func TestRunNamesTheLineOfAKeyFoundWrongOnlyAtStart(t *testing.T) {
	b := kafkatest.Fake(t)
	in := kafkatest.Topic(t, b, 1)
	root := t.TempDir()
	cfg := writeFile(t, "job.yaml", fmt.Sprintf(`name: to-nowhere
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {dir: %q}
state: {dir: %q}
sink:
  type: kafka
  topic: no-such-topic
http: {addr: "127.0.0.1:0"}
`, b.Addrs[0], in, filepath.Join(root, "checkpoints"), filepath.Join(root, "state")))
	code, _, errOut := call(t, "run", "--config", cfg)
	if want := cfg + ":8: "; code != 2 || !hasLine(errOut, want, "topic no-such-topic does not exist") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 2 and a line starting %q naming the missing topic", code, errOut, want)
	}
}

// TestDevExitsTwoOnAKeyFoundWrongOnlyAtStart: dev treats a config fault
// found at start as run does (it exited 1): exit 2, at the key's line.
// The sink writes to a cluster of its own (the embedded broker again), so
// dev does not create its topic.
func TestDevExitsTwoOnAKeyFoundWrongOnlyAtStart(t *testing.T) {
	root := t.TempDir()
	cfg := writeFile(t, "dev.yaml", fmt.Sprintf(`name: dev-to-nowhere
kafka: {brokers: ["${KAFKA_BROKERS}"]}
source: {topics: [orders]}
checkpoint: {dir: %q}
state: {dir: %q}
sink:
  type: kafka
  brokers: ["${KAFKA_BROKERS}"]
  topic: no-such-topic
http: {addr: "127.0.0.1:0"}
`, filepath.Join(root, "checkpoints"), filepath.Join(root, "state")))
	code, _, errOut := call(t, "dev", "--config", cfg, "--data", filepath.Join(root, "kafka"), "--rate", "100")
	if want := cfg + ":9: "; code != 2 || !hasLine(errOut, want, "topic no-such-topic does not exist") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 2 and a line starting %q naming the missing topic", code, errOut, want)
	}
}

// hasLine reports whether text has a line that starts with prefix and
// contains what.
func hasLine(text, prefix, what string) bool {
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, what) {
			return true
		}
	}
	return false
}

// TestRunExitsTwoAtInstancesModeOnTheDirectoriesOfAGroup: a single-mode
// job started on a checkpoint.dir that holds a group's slots is refused
// before it connects (it would restore its own older checkpoint and write
// again what the slots wrote since). That is its config's fault: exit 2,
// printed at instances.mode's line, as validate prints its problems.
func TestRunExitsTwoAtInstancesModeOnTheDirectoriesOfAGroup(t *testing.T) {
	root := t.TempDir()
	ckpt := filepath.Join(root, "checkpoints")
	if err := os.MkdirAll(filepath.Join(ckpt, "slot-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "job.yaml", fmt.Sprintf(`name: was-a-group
kafka: {brokers: ["127.0.0.1:1"]}
source: {topics: [orders]}
checkpoint: {dir: %q}
state: {dir: %q}
sink: {type: stdout}
instances:
  mode: single
http: {addr: "127.0.0.1:0"}
`, ckpt, filepath.Join(root, "state")))
	code, _, errOut := call(t, "run", "--config", cfg)
	if want := cfg + ":8: "; code != 2 || !hasLine(errOut, want, "holds its slots (slot-3)") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 2 and a line starting %q naming slot-3", code, errOut, want)
	}
}
