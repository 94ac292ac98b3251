package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkatest"
)

// parseTestJob parses a job's YAML from tmpl, whose five verbs are, in
// order: the broker, the topic, and the checkpoint, state and output
// directories (fresh ones under t.TempDir).
func parseTestJob(t *testing.T, tmpl string, b kafkatest.Brokers, topic string) *config.Job {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Parse("job.yaml", fmt.Appendf(nil, tmpl, b.Addrs[0], topic,
		filepath.Join(dir, "chk"), filepath.Join(dir, "state"), filepath.Join(dir, "out")), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serveTestJob runs cfg as `connector run` does (runJob: HTTP server and
// job, metrics on a fresh registry, warnings logged to t) until the test
// ends, then stops it and fails the test if it did not stop cleanly. It
// returns the base URL of the HTTP server, once it listens.
func serveTestJob(t *testing.T, cfg *config.Job) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- runJob(ctx, cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), newRegistry(), func(a string) { addr <- a })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("job: %v", err)
		}
	})
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		t.Fatalf("the job stopped before its HTTP server listened: %v", err)
		return ""
	}
}
