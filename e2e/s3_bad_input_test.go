package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/s3test"
)

// TestS3SinkRefusesAMissingBucketAndWrongCredentials: what the config
// names is missing or refused by S3, so the job exits 2 at once (a config
// fault is not retried), naming the key, the bucket and the endpoint.
func TestS3SinkRefusesAMissingBucketAndWrongCredentials(t *testing.T) {
	b := cluster(t)
	for _, tc := range []struct {
		name string
		set  func(snk map[string]any)
		want []string
	}{
		{"missing bucket", func(snk map[string]any) { snk["bucket"] = "no-such-bucket-e2e" },
			[]string{"sink.bucket", `"no-such-bucket-e2e" does not exist`}},
		{"wrong credentials", func(snk map[string]any) { snk["secret_access_key"] = "wrong-secret" },
			[]string{"sink.access_key_id", "refused access"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, c, _ := s3Job(t, b, jobSpec{}, "jsonl")
			tc.set(j.spec.Sink)
			p := j.start()
			msg, took := j.requireConfigFailure(p, time.Minute, append(tc.want, c.Endpoint)...)
			if strings.Contains(msg, "wrong-secret") || strings.Contains(msg, c.SecretKey) {
				t.Errorf("the failure shows the secret: %s", msg)
			}
			t.Logf("%s: exit 2 in %v: %s", p, took.Round(time.Millisecond), msg)
		})
	}
}

// TestS3SinkEndpointUnreachableAtStart: a job whose sink.endpoint refuses
// connections (a gate the test opens later) does not exit: the sink's
// recovery retries, logging each failed attempt, and /readyz answers 503.
// Once the gate opens (it forwards to the S3 server), the job recovers,
// becomes ready and drains: every id once, nothing of the job left in the
// bucket but its output.
func TestS3SinkEndpointUnreachableAtStart(t *testing.T) {
	const n = 5_000
	b := cluster(t)
	c := s3test.Server(t)
	g := newGate(t, strings.TrimPrefix(c.Endpoint, "http://"))
	j, _, bucket := s3Job(t, b, jobSpec{Parallelism: 2}, "jsonl")
	j.spec.Sink["endpoint"] = "http://" + g.addr
	produceIDs(t, b, j.topic, 0, n, false)
	p := j.start()
	const msg = "s3 sink: S3 unreachable at start; retrying"
	j.waitLogged(p, msg, 2, 2*time.Minute)
	why := j.waitNotReady(p, time.Minute)
	t.Logf("%s: %d retries logged %v after its start; /readyz: %s", p, len(j.logsOf(msg, p)),
		time.Since(p.started).Round(time.Millisecond), why)

	g.open(t)
	opened := time.Now()
	j.waitReady(p, 2*time.Minute)
	t.Logf("%s: ready %v after S3 became reachable", p, time.Since(opened).Round(time.Millisecond))
	j.waitForAll(p, n, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, fmt.Sprintf("unreachable_retries=%d", len(j.logsOf(msg, p))))
	if left := s3Leftovers(t, c, bucket, "out/"); len(left) > 0 {
		t.Errorf("after the final stop the bucket still holds: %v", left)
	}
}
