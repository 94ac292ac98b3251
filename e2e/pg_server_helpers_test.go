package e2e

// A PostgreSQL server of the test's own, for the test that restarts the
// database under a running job. pgtest.Restart restarts the shared server
// of PG_DSN, which breaks the connections of every test of every package
// running at that moment (go test runs packages in parallel); a server of
// our own (scripts/postgres --name e2e: its own run dir, port and
// postmaster) can be restarted without touching anyone else.

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pgOwnName is the scripts/postgres cluster name of the e2e tests' own
// server. One at a time: the e2e package runs its tests one after another.
const pgOwnName = "e2e"

// pgServer is a server the test started and may restart.
type pgServer struct {
	t      *testing.T
	script string
	dsn    string // superuser DSN of its database "connector"
}

// startOwnPGServer starts a fresh PostgreSQL 15 cluster of the test's own
// on a free loopback port and stops it when the test ends. A server left
// by an earlier run that was killed is stopped first.
func startOwnPGServer(t *testing.T) *pgServer {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	s := &pgServer{t: t, script: script}
	s.run("stop")
	_, port, _ := net.SplitHostPort(freeAddr(t))
	t0 := time.Now()
	out := s.run("start", "--port", port)
	t.Cleanup(func() { s.run("stop") })
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, "PG_DSN="); ok {
			s.dsn = v
		}
	}
	if s.dsn == "" {
		t.Fatalf("%s --name %s start printed no PG_DSN line: %s", script, pgOwnName, out)
	}
	t.Logf("own PostgreSQL server (scripts/postgres --name %s) at %s, started in %v", pgOwnName, pgDescribe(s.dsn), time.Since(t0).Round(time.Millisecond))
	return s
}

// restart restarts the server (pg_ctl restart -m fast: every connection
// breaks; what committed stays) and returns once it answers again.
func (s *pgServer) restart() {
	s.t.Helper()
	t0 := time.Now()
	s.run("restart")
	s.t.Logf("own PostgreSQL server restarted (pg_ctl restart -m fast) in %v", time.Since(t0).Round(time.Millisecond))
}

// run runs scripts/postgres --name e2e args and returns its stdout; it
// fails the test when the script fails.
func (s *pgServer) run(args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.script, append([]string{"--name", pgOwnName}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("%s --name %s %s: %v\n%s", s.script, pgOwnName, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
