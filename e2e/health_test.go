package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/s3test"
)

// apiCheckpoints is the part of /api/checkpoints this test reads.
type apiCheckpoints struct {
	Live    bool   `json:"live"`
	NotLive string `json:"not_live"`
	Counts  struct {
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
	} `json:"counts"`
	History []struct {
		ID         uint64  `json:"id"`
		Status     string  `json:"status"`
		DurationMS float64 `json:"duration_ms"`
		AckedMS    float64 `json:"acked_ms"`
		Reason     string  `json:"reason"`
	} `json:"history"`
}

// tryCheckpoints reads /api/checkpoints.
func tryCheckpoints(p *proc) (apiCheckpoints, error) {
	code, body, err := p.get("/api/checkpoints")
	var st apiCheckpoints
	if err == nil && code != 200 {
		err = fmt.Errorf("HTTP %d: %s", code, body)
	}
	if err == nil {
		err = json.Unmarshal(body, &st)
	}
	return st, err
}

// checkpoints reads /api/checkpoints or fails the test.
func (j *job) checkpoints(p *proc) apiCheckpoints {
	j.t.Helper()
	st, err := tryCheckpoints(p)
	if err != nil {
		j.fatalf(p, "/api/checkpoints: %v", err)
	}
	return st
}

// TestHealthzFailsWhileThePipelineIsWedged: a job whose checkpoint storage
// stops answering (a gate in front of the S3 server, closed by the test)
// while records keep coming can complete no checkpoint; once that has
// lasted longer than http.stall_intervals (5 intervals of 300 ms, at least
// checkpoint.timeout + 1 interval: 1.5 s), /healthz answers 503 with the
// reason, and /api/checkpoints says the same. When the storage answers
// again, checkpoints complete, /healthz is 200 again, and every id is
// delivered once. /api/checkpoints' history holds the completed
// checkpoints with their phases.
func TestHealthzFailsWhileThePipelineIsWedged(t *testing.T) {
	b := cluster(t)
	c := s3test.Server(t)
	bucket := s3test.Bucket(t, c)
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, u.Host)
	g.open(t)
	j := newJob(t, b, jobSpec{Config: map[string]map[string]any{
		"checkpoint": {"timeout": "1s", "tolerable_failures": 1_000_000, "storage": "s3://" + bucket + "/ckpt",
			"s3": map[string]any{"endpoint": "http://" + g.addr, "region": c.Region, "access_key_id": c.AccessKey, "secret_access_key": c.SecretKey}},
		"http": {"stall_intervals": 5},
	}})
	prod := startProducer(t, b, j.topic, producerSpec{N: 1_000_000, Rate: 2_000})
	p := j.start()
	j.pollUntil(p, time.Minute, 100*time.Millisecond, func() (bool, string) {
		st, err := tryCheckpoints(p)
		return err == nil && st.Counts.Completed >= 3, fmt.Sprintf("%d checkpoints completed (%v)", st.Counts.Completed, err)
	})
	if code, body, err := p.get("/healthz"); err != nil || code != 200 {
		j.fatalf(p, "/healthz before the storage went away: %d %s %v", code, body, err)
	}

	g.close()
	var reason string
	j.pollUntil(p, time.Minute, 100*time.Millisecond, func() (bool, string) {
		code, body, err := p.get("/healthz")
		reason = string(body)
		return err == nil && code == 503, fmt.Sprintf("/healthz %d %q %v", code, body, err)
	})
	if !strings.Contains(reason, "stalled") || !strings.Contains(reason, "http.stall_intervals") || !strings.Contains(reason, "records wait") {
		t.Errorf("/healthz's reason: %q", reason)
	}
	if st := j.checkpoints(p); st.Live || !strings.Contains(st.NotLive, "stalled") {
		t.Errorf("/api/checkpoints during the stall: live %v, not_live %q", st.Live, st.NotLive)
	}
	before := j.checkpoints(p).Counts.Completed
	t.Logf("stalled: %s", reason)

	g.open(t)
	j.pollUntil(p, 2*time.Minute, 100*time.Millisecond, func() (bool, string) {
		code, body, err := p.get("/healthz")
		return err == nil && code == 200, fmt.Sprintf("/healthz %d %q %v", code, body, err)
	})
	st := j.checkpoints(p)
	if st.Counts.Completed <= before || !st.Live {
		t.Errorf("after the storage came back: %+v", st.Counts)
	}
	phases := 0
	for _, r := range st.History {
		if r.Status == "completed" && r.DurationMS > 0 && r.AckedMS > 0 {
			phases++
		}
	}
	if phases == 0 {
		t.Errorf("no completed checkpoint with its phases in the history: %+v", st.History)
	}
	t.Logf("history: %d records, counts %+v", len(st.History), st.Counts)

	n := prod.stop(t, time.Minute)
	j.waitForAll(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, "")
}
