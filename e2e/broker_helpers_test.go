package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// A broker of the tests' own
//
// Some scenarios need broker settings the shared broker (KAFKA_BROKERS) must
// not have, or stop a broker while a job runs. They use a second Apache
// Kafka broker that the tests start themselves with scripts/kafka, as
// instance "e2e-tight" (its own run dir, .cache/kafka/run-e2e-tight/, and
// free loopback ports), once per test binary, and stop when the binary
// ends. It needs what scripts/kafka needs (java 17+, mvn or the cached
// jars); without them these tests fail, they never skip.
//
// Its static settings, beyond scripts/kafka's own:
//
//   - transaction.max.timeout.ms=10000: a transaction times out within
//     seconds (jobs on it set sink.transaction_timeout to 6s);
//   - transaction.abort.timed.out.transaction.cleanup.interval.ms=500: the
//     broker looks for timed-out transactions every half second, so it
//     aborts one within 0.5 s of its timeout;
//   - auto.create.topics.enable=true: a metadata request that asks for it
//     creates a missing topic, so a test can show that the sink never does;
//   - an authorizer (StandardAuthorizer, no ACL: nothing allowed) and a
//     second listener, SASL_PLAINTEXT with PLAIN and one user, connector
//     (tightUser, tightPassword), whose rights are the ACLs a test grants.
//     Everyone on the PLAINTEXT listener is User:ANONYMOUS, a super user:
//     the tests, and the jobs of the tests that need no authorization.
const tightInstance = "e2e-tight"

// tightSettings are the settings above for the broker's ports.
func tightSettings(port, cport, sport string) []string {
	return []string{
		"transaction.max.timeout.ms=10000",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
		"auto.create.topics.enable=true",
		"listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + cport + ",SASL_PLAINTEXT://127.0.0.1:" + sport,
		"advertised.listeners=PLAINTEXT://127.0.0.1:" + port + ",SASL_PLAINTEXT://127.0.0.1:" + sport,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_` +
			tightUser + `="` + tightPassword + `";`,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS",
	}
}

// The tight broker's SASL user.
const (
	tightUser     = "connector"
	tightPassword = "connector-secret"
)

var tight struct {
	mu      sync.Mutex
	started bool
	down    bool // stopped by stopTight, not started again yet
	b       kafkatest.Brokers
	sasl    string // the SASL_PLAINTEXT listener's address
	err     error
}

// tightCluster starts the tight broker on first use and returns it; it
// fails the test if the broker cannot be started.
func tightCluster(t testing.TB) kafkatest.Brokers {
	t.Helper()
	tight.mu.Lock()
	defer tight.mu.Unlock()
	if !tight.started && tight.err == nil {
		tight.started = true
		// A broker of this instance left by an earlier run that did not end
		// cleanly (a test binary killed on timeout) is stopped first.
		if out, err := kafkaScript("stop", "--name", tightInstance); err != nil {
			tight.err = fmt.Errorf("scripts/kafka stop --name %s: %v\n%s", tightInstance, err, out)
		} else {
			port, cport, sport := freePort(t), freePort(t), freePort(t)
			args := []string{"start", "--name", tightInstance, "--port", port, "--controller-port", cport}
			for _, s := range tightSettings(port, cport, sport) {
				args = append(args, "--set", s)
			}
			t0 := time.Now()
			out, err := kafkaScript(args...)
			if err != nil {
				tight.err = fmt.Errorf("scripts/kafka %s: %v\n%s", strings.Join(args, " "), err, out)
			} else {
				tight.b = kafkatest.Brokers{Addrs: []string{"127.0.0.1:" + port}, Real: true}
				tight.sasl = "127.0.0.1:" + sport
				t.Logf("started the tight broker %s (SASL_PLAINTEXT on %s) in %v", tight.b, tight.sasl, time.Since(t0).Round(time.Millisecond))
			}
		}
	}
	if tight.err != nil {
		t.Fatalf("the tight broker: %v", tight.err)
	}
	return tight.b
}

// tightSASL returns the address of the tight broker's SASL_PLAINTEXT
// listener (starting the broker on first use).
func tightSASL(t testing.TB) string {
	t.Helper()
	tightCluster(t)
	tight.mu.Lock()
	defer tight.mu.Unlock()
	return tight.sasl
}

// stopTightBroker stops the tight broker if this test binary started it
// (TestMain calls it).
func stopTightBroker() {
	tight.mu.Lock()
	defer tight.mu.Unlock()
	if tight.started {
		if out, err := kafkaScript("stop", "--name", tightInstance); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: scripts/kafka stop --name %s: %v\n%s", tightInstance, err, out)
		}
	}
}

// stopTight stops the tight broker (a broker outage for the test that
// calls it); startTightAgain starts it again on its data. If the test
// ends while the broker is down, the broker is started again for the
// tests after it.
func stopTight(t testing.TB) {
	t.Helper()
	tightCluster(t)
	t0 := time.Now()
	out, err := kafkaScript("stop", "--name", tightInstance)
	tight.mu.Lock()
	tight.down = true
	tight.mu.Unlock()
	t.Cleanup(func() {
		tight.mu.Lock()
		down := tight.down
		tight.mu.Unlock()
		if down {
			startTightAgain(t)
		}
	})
	if err != nil {
		t.Fatalf("scripts/kafka stop --name %s: %v\n%s", tightInstance, err, out)
	}
	t.Logf("stopped the tight broker in %v", time.Since(t0).Round(time.Millisecond))
}

func startTightAgain(t testing.TB) {
	t.Helper()
	t0 := time.Now()
	if out, err := kafkaScript("start", "--name", tightInstance, "--keep-data"); err != nil {
		t.Fatalf("scripts/kafka start --name %s --keep-data: %v\n%s", tightInstance, err, out)
	}
	tight.mu.Lock()
	tight.down = false
	tight.mu.Unlock()
	t.Logf("started the tight broker again in %v", time.Since(t0).Round(time.Millisecond))
}

// kafkaScript runs scripts/kafka from the module root and returns its
// combined output.
func kafkaScript(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "scripts/kafka", args...)
	cmd.Dir = ".." // the module root: this package is <root>/e2e
	// Under load the broker may take longer than the script's default 90 s.
	cmd.Env = append(os.Environ(), "KAFKA_START_TIMEOUT=240")
	return cmd.CombinedOutput()
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	return port
}

// ---------------------------------------------------------------------------
// A seed address that answers only once the test says so

// gate is a loopback address that refuses connections until open is
// called, and from then on forwards each connection to target. As a seed
// broker it makes a cluster unreachable until the test opens it: a client
// bootstraps through it, then reaches the brokers at the addresses they
// advertise.
type gate struct {
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newGate(t testing.TB, target string) *gate {
	t.Helper()
	g := &gate{addr: freeAddr(t), target: target}
	t.Cleanup(g.close)
	return g
}

// open starts listening on the gate's address.
func (g *gate) open(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		t.Fatalf("gate: listen on %s (free a moment ago): %v", g.addr, err)
	}
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.forward(c)
		}
	}()
}

func (g *gate) forward(c net.Conn) {
	u, err := net.Dial("tcp", g.target)
	if err != nil {
		c.Close()
		return
	}
	g.mu.Lock()
	g.conns = append(g.conns, c, u)
	g.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); u.Close() }()
	_, _ = io.Copy(c, u)
	c.Close()
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
	}
	for _, c := range g.conns {
		c.Close()
	}
}

// waitNotReadyFor polls /readyz until it answers 503 with a reason that
// contains one of whys, then requires /api/checkpoints to agree
// (waitNotReady), and returns the reason. It fails the test when p ends or
// timeout passes.
func (j *job) waitNotReadyFor(p *proc, timeout time.Duration, whys ...string) string {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := p.get("/readyz")
		if err == nil && code == http.StatusServiceUnavailable && slices.ContainsFunc(whys, func(why string) bool { return strings.Contains(string(body), why) }) {
			return j.waitNotReady(p, timeout)
		}
		j.requireRunning(p, fmt.Sprintf("waiting for /readyz to say not ready: %q", whys))
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: /readyz did not answer 503 %q within %v (last: HTTP %d %q, %v)", p, whys, timeout, code, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
