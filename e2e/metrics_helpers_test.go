package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ---------------------------------------------------------------------------
// Metrics and readiness

var httpClient = &http.Client{Timeout: time.Second}

func (p *proc) get(path string) (int, []byte, error) {
	resp, err := httpClient.Get("http://" + p.addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// metric scrapes /metrics and returns the sum of the samples of name.
func (p *proc) metric(name string) (float64, error) {
	code, body, err := p.get("/metrics")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("/metrics: HTTP %d", code)
	}
	v, ok := sumMetric(string(body), name)
	if !ok {
		return 0, fmt.Errorf("/metrics has no %s", name)
	}
	return v, nil
}

// waitMetric polls name every interval until pred holds, and returns the
// value and the time since p started. It fails the test when p ends or
// timeout passes.
func (j *job) waitMetric(p *proc, name string, pred func(float64) bool, interval, timeout time.Duration) (float64, time.Duration) {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	var last float64
	for {
		v, err := p.metric(name)
		if err == nil && pred(v) {
			return v, time.Since(p.started)
		}
		lastErr, last = err, v
		j.requireRunning(p, "waiting for "+name)
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: %s did not reach the wanted value within %v (last %v, error %v)", p, name, timeout, last, lastErr)
		}
		time.Sleep(interval)
	}
}

// waitReady polls /readyz until it answers 200.
func (j *job) waitReady(p *proc, timeout time.Duration) time.Duration {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, _, err := p.get("/readyz")
		if err == nil && code == http.StatusOK {
			return time.Since(p.started)
		}
		j.requireRunning(p, "waiting for /readyz")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: /readyz not 200 within %v (last: HTTP %d, %v)", p, timeout, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sumMetric returns the sum of every sample of the metric called name in the
// Prometheus text format, and whether there was one. Metrics that merely
// share the prefix (name_created, a histogram's name_bucket) do not count.
func sumMetric(text, name string) (float64, bool) {
	var sum float64
	found := false
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ \t")
		if end < 0 || line[:end] != name {
			continue
		}
		rest := line[end:]
		if rest[0] == '{' {
			close := labelsEnd(rest)
			if close < 0 {
				continue
			}
			rest = rest[close+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// labelsEnd returns the index of the '}' closing the label set s starts
// with, skipping quoted label values (which may hold '}' and escaped quotes).
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i
		}
	}
	return -1
}

// waitNotReady polls /readyz until it answers 503 with "not ready: <why>",
// then requires /api/checkpoints to say so too ("ready": false and a
// "not_ready" reason), and returns why. Call it only while nothing can make
// p ready again. It fails the test when p ends or timeout passes.
func (j *job) waitNotReady(p *proc, timeout time.Duration) string {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := p.get("/readyz")
		if err == nil && code == http.StatusServiceUnavailable {
			why, ok := strings.CutPrefix(strings.TrimSpace(string(body)), "not ready: ")
			if !ok || why == "" {
				j.fatalf(p, "%s: /readyz answers 503 with %q, want \"not ready: <why>\"", p, body)
			}
			code, body, err := p.get("/api/checkpoints")
			var st struct {
				Ready    *bool  `json:"ready"`
				NotReady string `json:"not_ready"`
			}
			if err != nil || code != http.StatusOK || json.Unmarshal(body, &st) != nil || st.Ready == nil || *st.Ready || st.NotReady == "" {
				j.fatalf(p, "%s: /readyz says not ready (%s), but /api/checkpoints answers HTTP %d %s (%v), want \"ready\": false and a \"not_ready\" reason",
					p, why, code, body, err)
			}
			j.t.Logf("%s: /readyz 503 not ready: %s; /api/checkpoints not_ready: %s", p, why, st.NotReady)
			return why
		}
		j.requireRunning(p, "waiting for /readyz to say not ready")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: /readyz not 503 within %v (last: HTTP %d %q, %v)", p, timeout, code, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
