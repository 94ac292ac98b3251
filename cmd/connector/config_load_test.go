package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dev resolves ${KAFKA_BROKERS} to its embedded broker, also in the load
// that finds the topics before the broker starts: a config whose brokers
// are a bare ${KAFKA_BROKERS} (deploy/kubernetes/configmap.yaml) is not
// refused with exit 2, "environment variable KAFKA_BROKERS is not set",
// when the variable is not set. Here the status port is taken, so that a
// dev run that gets past the config stops at once (exit 1).
func TestDevResolvesBareKafkaBrokersWithoutTheEnvironment(t *testing.T) {
	t.Setenv("KAFKA_BROKERS", "")
	os.Unsetenv("KAFKA_BROKERS")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	path := writeFile(t, "job.yaml", fmt.Sprintf(`name: orders
kafka: {brokers: ["${KAFKA_BROKERS}"]}
source: {topics: [orders]}
sink: {type: file, path: %s}
checkpoint: {dir: %s}
state: {dir: %s}
http: {addr: %q}
`, filepath.Join(dir, "out"), filepath.Join(dir, "cp"), filepath.Join(dir, "state"), busy.Addr().String()))
	code, _, errOut := call(t, "dev", "--config", path, "--data", filepath.Join(dir, "kafka"))
	if code == exitUsage || strings.Contains(errOut, "KAFKA_BROKERS is not set") {
		t.Errorf("dev refused the config for want of KAFKA_BROKERS, which it resolves itself: exit %d\nstderr:\n%s", code, errOut)
	}
}
