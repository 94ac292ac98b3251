package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/metrics"
)

// start runs a server on a free loopback port and stops it when the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.Log = zerolog.New(zerolog.NewTestWriter(t))
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

type response struct {
	code        int
	contentType string
	body        string
}

func get(t *testing.T, s *Server, path string) response {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), string(body)}
}

func TestAddrReportsTheBoundPort(t *testing.T) {
	s := start(t, Config{})
	if strings.HasSuffix(s.Addr(), ":0") || !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want 127.0.0.1 and the real port", s.Addr())
	}
}

func TestHealthzIsOKWhileRunning(t *testing.T) {
	s := start(t, Config{Ready: func() error { return errors.New("restoring") }})
	if r := get(t, s, "/healthz"); r.code != 200 || r.body != "ok\n" {
		t.Errorf("got %d %q", r.code, r.body)
	}
}

// /healthz follows Live: 503 with the reason while it reports a stall,
// 200 again once it does not; readiness plays no part.
func TestHealthzFollowsLive(t *testing.T) {
	var stalled atomic.Bool
	stalled.Store(true)
	s := start(t, Config{Ready: func() error { return nil }, Live: func() error {
		if stalled.Load() {
			return errors.New("stalled: no checkpoint completed for 5m")
		}
		return nil
	}})
	if r := get(t, s, "/healthz"); r.code != 503 || r.body != "unhealthy: stalled: no checkpoint completed for 5m\n" {
		t.Errorf("while stalled: got %d %q", r.code, r.body)
	}
	stalled.Store(false)
	if r := get(t, s, "/healthz"); r.code != 200 || r.body != "ok\n" {
		t.Errorf("after: got %d %q", r.code, r.body)
	}
}

func TestReadyzFollowsReady(t *testing.T) {
	var ready atomic.Bool
	s := start(t, Config{Ready: func() error {
		if !ready.Load() {
			return errors.New("checkpoints failing")
		}
		return nil
	}})
	if r := get(t, s, "/readyz"); r.code != 503 || r.body != "not ready: checkpoints failing\n" {
		t.Errorf("before ready: got %d %q", r.code, r.body)
	}
	ready.Store(true)
	if r := get(t, s, "/readyz"); r.code != 200 || r.body != "ready\n" {
		t.Errorf("after ready: got %d %q", r.code, r.body)
	}
}

func TestMetricsServesTheRegistryAsPrometheusText(t *testing.T) {
	reg := metrics.NewRegistry(metrics.BuildInfo{Version: "v9.9.9"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "connector_records_in_total", Help: "Records read."})
	reg.MustRegister(c)
	c.Add(12)
	s := start(t, Config{Metrics: reg})
	r := get(t, s, "/metrics")
	if r.code != 200 || !strings.HasPrefix(r.contentType, "text/plain; version=0.0.4; charset=utf-8") {
		t.Errorf("got %d %q", r.code, r.contentType)
	}
	for _, want := range []string{
		"\nconnector_records_in_total 12\n",
		"\n# TYPE go_goroutines gauge\n",
		"\n# TYPE process_cpu_seconds_total counter\n",
		`connector_build_info{franz_go="unknown",goversion="unknown",pebble="unknown",version="v9.9.9"} 1`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("body lacks %q:\n%s", want, r.body)
		}
	}
}

func TestMetricsWithoutARegistryIsEmpty(t *testing.T) {
	s := start(t, Config{})
	if r := get(t, s, "/metrics"); r.code != 200 || r.body != "" {
		t.Errorf("got %d %q", r.code, r.body)
	}
}

// failing is a collector that always fails.
type failing struct{ desc *prometheus.Desc }

func (f failing) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }
func (f failing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.desc, errors.New("disk gone"))
}

// TestMetricsLeavesOutAFailingCollector: one broken collector must not
// hide the others from monitoring.
func TestMetricsLeavesOutAFailingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ok_total", Help: "Fine."})
	c.Inc()
	reg.MustRegister(c, failing{prometheus.NewDesc("broken", "Fails.", nil, nil)})
	s := start(t, Config{Metrics: reg})
	if r := get(t, s, "/metrics"); r.code != 200 || !strings.Contains(r.body, "\nok_total 1\n") || strings.Contains(r.body, "broken") {
		t.Errorf("got %d:\n%s", r.code, r.body)
	}
}

func TestCheckpointsServesJSON(t *testing.T) {
	type info struct {
		ID     uint64 `json:"id"`
		Status string `json:"status"`
	}
	s := start(t, Config{Checkpoints: func() (any, error) {
		return []info{{41, "ok"}, {42, "corrupt"}}, nil
	}})
	r := get(t, s, "/api/checkpoints")
	if r.code != 200 || r.contentType != "application/json" {
		t.Fatalf("got %d %q: %s", r.code, r.contentType, r.body)
	}
	var got []info
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != (info{42, "corrupt"}) {
		t.Errorf("got %+v", got)
	}
}

func TestCheckpointsErrorIsA500WithJSON(t *testing.T) {
	s := start(t, Config{Checkpoints: func() (any, error) {
		return nil, errors.New("list checkpoints: disk gone")
	}})
	r := get(t, s, "/api/checkpoints")
	var body struct{ Error string }
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	if r.code != 500 || r.contentType != "application/json" || body.Error != "list checkpoints: disk gone" {
		t.Errorf("got %d %q %+v", r.code, r.contentType, body)
	}
}

func TestWrongMethodIs405(t *testing.T) {
	s := start(t, Config{})
	resp, err := http.Post("http://"+s.Addr()+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", resp.StatusCode)
	}
}

// TestCloseWaitsForRequestsInFlight: a request being served when Close is
// called still gets its answer, and the port is released afterwards.
func TestCloseWaitsForRequestsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, err := Start(Config{
		Addr: "127.0.0.1:0",
		Log:  zerolog.New(zerolog.NewTestWriter(t)),
		Checkpoints: func() (any, error) {
			close(entered)
			<-release
			return "done", nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan response, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr() + "/api/checkpoints")
		if err != nil {
			result <- response{body: err.Error()}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- response{code: resp.StatusCode, body: string(body)}
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a request was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
	if r := <-result; r.code != 200 || r.body != "\"done\"\n" {
		t.Errorf("in-flight request got %d %q", r.code, r.body)
	}
	if _, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		t.Error("server still answers after Close")
	}
}

func TestStartFailsOnABusyAddress(t *testing.T) {
	s := start(t, Config{})
	if _, err := Start(Config{Addr: s.Addr()}); err == nil {
		t.Error("second Start on the same address succeeded")
	}
}
