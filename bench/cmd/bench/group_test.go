package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/config"
)

// TestGroupConnectorConfigIsValid: the job file the bench writes for a
// group contender passes the connector's own validation, in group mode
// with one slot per partition of the load, and the job's name leaves room
// for the slot suffix.
func TestGroupConnectorConfigIsValid(t *testing.T) {
	s := spec{label: "connector-group-3", name: "connector-group-3", kind: "connector",
		topic: topic{Name: "bench-v2-1000b-1000000", Records: 1000000, Size: 1000}, parallelism: 1,
		mode: "exactly_once", interval: time.Second, processes: 3}
	dir := filepath.Join(t.TempDir(), "connector-group-3-bench-v2-1000b-1000000-p1-235959.999")
	text := connectorConfig(s, dir, "127.0.0.1:0")
	job, err := config.Parse("group.yaml", []byte(text), func(k string) (string, bool) {
		return "127.0.0.1:9092", k == "KAFKA_BROKERS"
	})
	if err != nil {
		t.Fatalf("config does not parse: %v\n%s", err, text)
	}
	if !job.Instances.Group() || job.Instances.Slots != groupSlots || job.Instances.SessionTimeout != groupSessionTimeout {
		t.Errorf("instances %+v, want group mode with %d slots and %s", job.Instances, groupSlots, groupSessionTimeout)
	}
	if !strings.HasPrefix(job.Name, groupPrefix) || job.Name != jobName(dir) {
		t.Errorf("job name %q, want %q (starting with %s: the slot topic the bench deletes)", job.Name, jobName(dir), groupPrefix)
	}
}

// TestGroupHandoversCountMovedSlotsUpToTheEnd: the slots a rebalance moved
// (revoked or lost) and the slots ready count until the drain's end; the
// releases of the final stop and lines after the end do not.
func TestGroupHandoversCountMovedSlotsUpToTheEnd(t *testing.T) {
	started := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	end := started.Add(5 * time.Second)
	a := writeLog(t, `{"level":"info","job":"j","slot":3,"why":"revoked","took_ms":412.5,"time":"2026-12-02T10:00:01.5Z","message":"slot released"}
{"level":"info","job":"j","slot":0,"took_ms":95.25,"time":"2026-12-02T10:00:00.8Z","message":"slot ready"}
{"level":"info","job":"j","slot":0,"why":"stop","took_ms":900,"time":"2026-12-02T10:00:06Z","message":"slot released"}
`)
	b := writeLog(t, `{"level":"info","job":"j","slot":3,"took_ms":1800,"time":"2026-12-02T10:00:02.25Z","message":"slot ready"}
{"level":"warn","job":"j","slot":5,"why":"lost","took_ms":50,"time":"2026-12-02T10:00:03Z","message":"slot released"}
{"level":"info","job":"j","slot":5,"took_ms":9000,"time":"2026-12-02T10:00:09Z","message":"slot ready"}
`)
	var r result
	groupHandovers(&r, []string{a, b, filepath.Join(t.TempDir(), "missing.log")}, started, end)
	if r.Revoked != 2 || r.ReleaseMaxMs != 412.5 || r.ReadyMaxMs != 1800 || r.LastReady != 2.25 {
		t.Errorf("got %d moved, release max %v ms, ready max %v ms, last ready %v s; want 2, 412.5, 1800, 2.25",
			r.Revoked, r.ReleaseMaxMs, r.ReadyMaxMs, r.LastReady)
	}
}
