package main

import (
	"errors"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/httpapi"
)

// healthcheck exits 0 while /healthz answers 200, 1 on 503 (saying why),
// when nothing listens, and for a bad --addr: never 2, which Docker
// reserves of a health check.
func TestHealthcheckFollowsHealthz(t *testing.T) {
	var sick atomic.Bool
	srv, err := httpapi.Start(httpapi.Config{Addr: "127.0.0.1:0", Log: zerolog.Nop(), Live: func() error {
		if sick.Load() {
			return errors.New("stalled")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(t.Context()) })
	if code, out, _ := call(t, "healthcheck", "--addr", srv.Addr()); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("healthy: exit %d, %q", code, out)
	}
	sick.Store(true)
	if code, _, errOut := call(t, "healthcheck", "--addr", srv.Addr()); code != 1 || !strings.Contains(errOut, "503") || !strings.Contains(errOut, "stalled") {
		t.Errorf("unhealthy: exit %d, %q", code, errOut)
	}
	t.Setenv("HTTP_ADDR", "0.0.0.0:1")
	if code, _, errOut := call(t, "healthcheck"); code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("nothing listening (HTTP_ADDR with a wildcard host): exit %d, %q", code, errOut)
	}
	if code, _, _ := call(t, "healthcheck", "--addr", "nonsense"); code != 1 {
		t.Errorf("bad --addr: exit %d, want 1", code)
	}
	if code, _, _ := call(t, "healthcheck", "--no-such-flag"); code != 1 {
		t.Errorf("bad flag: exit %d, want 1", code)
	}
}

// With --config, healthcheck asks the job's own http.addr, ${VAR}s
// resolved as run resolves them: an image's HTTP_ADDR (0.0.0.0:8080 in
// the Dockerfile) must not send it to a port the job does not listen on.
func TestHealthcheckAsksTheJobsHTTPAddr(t *testing.T) {
	srv, err := httpapi.Start(httpapi.Config{Addr: "127.0.0.1:0", Log: zerolog.Nop(), Live: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(t.Context()) })
	job := func(addr string) string {
		return writeFile(t, "job.yaml", "name: orders\nkafka: {brokers: [localhost:9092]}\nsource: {topics: [orders]}\nsink: {type: stdout}\nhttp: {addr: \""+addr+"\"}\n")
	}
	t.Setenv("HTTP_ADDR", "0.0.0.0:1") // the image's, not the job's
	if code, out, errOut := call(t, "healthcheck", "--config", job(srv.Addr())); code != 0 || !strings.Contains(out, srv.Addr()) {
		t.Errorf("the job's literal http.addr: exit %d, %q %q", code, out, errOut)
	}
	t.Setenv("JOB_HTTP", srv.Addr())
	if code, out, errOut := call(t, "healthcheck", "--config", job("${JOB_HTTP}")); code != 0 || !strings.Contains(out, srv.Addr()) {
		t.Errorf("http.addr through ${JOB_HTTP}: exit %d, %q %q", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"port 0", []string{"--config", job("127.0.0.1:0")}, "port 0"},
		{"a bad config", []string{"--config", writeFile(t, "bad.yaml", "name: orders\nsource: {topicz: [x]}\n")}, "topicz"},
		{"a missing config", []string{"--config", "/no/such/job.yaml"}, "/no/such/job.yaml"},
		{"both", []string{"--config", job(srv.Addr()), "--addr", srv.Addr()}, "not both"},
	} {
		if code, _, errOut := call(t, append([]string{"healthcheck"}, tc.args...)...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d (want 1), stderr %q (want %q)", tc.name, code, errOut, tc.want)
		}
	}
}

// Without -X main.version the version comes from what the toolchain
// recorded: the module version, else the VCS revision.
func TestVersionFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		set  string
		info *debug.BuildInfo
		want string
	}{
		{"v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v9"}}, "v1.2.3"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4e631dd0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}, "dev-4e631dd01234-dirty"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"dev", nil, "dev"},
	} {
		if got := versionOf(tc.set, tc.info); got != tc.want {
			t.Errorf("versionOf(%q, %+v) = %q, want %q", tc.set, tc.info, got, tc.want)
		}
	}
}
