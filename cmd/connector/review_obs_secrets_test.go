package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/syncbuf"
)

// TestReviewObsSinkSecretsStayOutOfLogsAndEndpointsWhileTheSinkIsUnreachable
// (passes: a confirmation; the config tests cover Dump only): a running
// job whose sink cannot be reached (the PostgreSQL sink's dsn in key=value
// form, the S3 sink's secret key from ${VAR}) retries, logging each
// failure with the library's error, and serves /readyz, /api/checkpoints,
// /api/job and /metrics meanwhile; none of them, nor any log line, holds
// the password or the secret key.
func TestReviewObsSinkSecretsStayOutOfLogsAndEndpointsWhileTheSinkIsUnreachable(t *testing.T) {
	const secret = "Hunter2-ReviewObs-9f3b"
	dead := closedPort(t)
	for name, sinkYAML := range map[string]string{
		"postgres key=value dsn": fmt.Sprintf(`{type: postgres, table: orders, spool_dir: %%q, dsn: "host=127.0.0.1 port=%d user=alice password=%s dbname=shop sslmode=disable connect_timeout=2"}`, dead, secret),
		"postgres URL dsn":       fmt.Sprintf(`{type: postgres, table: orders, spool_dir: %%q, dsn: "postgres://alice:%s@127.0.0.1:%d/shop?sslmode=disable"}`, secret, dead),
		"s3 secret key from env": fmt.Sprintf(`{type: s3, bucket: orders, endpoint: "http://127.0.0.1:%d", access_key_id: AKIAREVIEW, secret_access_key: "${REVIEW_S3_SECRET}", path_style: true, prefix: review/}`, dead),
	} {
		t.Run(name, func(t *testing.T) {
			b := kafkatest.Fake(t)
			topic := kafkatest.Topic(t, b, 1)
			dir := t.TempDir()
			y := fmt.Sprintf(`
name: review-secrets
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {interval: 100ms, dir: %q}
state: {dir: %q}
sink: `+strings.Replace(sinkYAML, "%q", fmt.Sprintf("%q", dir+"/spool"), 1)+`
http: {addr: "127.0.0.1:0"}
`, b.Addrs[0], topic, dir+"/chk", dir+"/state")
			cfg, err := config.Parse("job.yaml", []byte(y), func(k string) (string, bool) {
				if k == "REVIEW_S3_SECRET" {
					return secret, true
				}
				return "", false
			})
			if err != nil {
				t.Fatal(err)
			}
			var logs syncbuf.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			addr, done := make(chan string, 1), make(chan error, 1)
			go func() {
				done <- runJob(ctx, cfg, zerolog.New(&logs).Level(zerolog.DebugLevel), newRegistry(), func(a string) { addr <- a })
			}()
			var base string
			select {
			case a := <-addr:
				base = "http://" + a
			case err := <-done:
				t.Fatalf("the job stopped before it served: %v", err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for logs.Count("unreachable") < 2 {
				if time.Now().After(deadline) {
					cancel()
					<-done
					t.Fatalf("the sink did not retry twice within 60s:\n%s", logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			served := map[string]string{}
			for _, path := range []string{"/readyz", "/healthz", "/api/checkpoints", "/api/job", "/metrics"} {
				served[path] = get(t, base+path)
			}
			cancel()
			<-done // stopped before the job started, or failed: either way its logs are what is checked
			served["log"] = logs.String()
			if !strings.Contains(served["/api/job"], `"dsn": "***"`) && !strings.Contains(served["/api/job"], `"secret_access_key": "***"`) {
				t.Errorf("/api/job shows no redacted secret: %s", served["/api/job"])
			}
			for where, text := range served {
				if strings.Contains(text, secret) {
					t.Errorf("%s shows the secret:\n%s", where, text)
				}
			}
		})
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
