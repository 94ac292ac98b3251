package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func init() {
	register("healthcheck", command{
		summary: "exit 0 when the connector's /healthz answers 200, 1 otherwise (a container's HEALTHCHECK)",
		run:     runHealthcheck,
	})
}

// runHealthcheck GETs /healthz of the connector and exits 0 on 200, 1
// otherwise, printing the answer. It asks --addr; else the http.addr of
// the job at --config (read as run reads it, ${VAR}s included); else the
// HTTP_ADDR environment variable; else 127.0.0.1:8080. A wildcard host is
// asked on loopback. It needs no shell or curl, so an image FROM scratch
// can use it.
//
// Every failure exits 1, a bad flag or config included: Docker reserves
// exit code 2 of a health check, and a health check that cannot find its
// connector is "unhealthy", which is what an operator must see.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("healthcheck", "", stdout, stderr)
	addrFlag := fs.String("addr", "", "host:port of the connector's HTTP server (default: --config's http.addr, else $HTTP_ADDR, else 127.0.0.1:8080)")
	path := fs.String("config", "", "the job's YAML config `file`, whose http.addr to ask")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if code, ok := parseFlags(fs, args); !ok {
		return min(code, exitFailure)
	}
	addr, from := *addrFlag, "--addr"
	switch {
	case addr != "" && *path != "":
		fmt.Fprintln(stderr, "connector healthcheck: give --addr or --config, not both")
		return exitFailure
	case *path != "":
		job, ok := loadJob(*path, stderr)
		if !ok {
			return exitFailure
		}
		addr, from = job.HTTP.Addr, job.File()+": http.addr"
	case addr == "":
		addr, from = cmp.Or(os.Getenv("HTTP_ADDR"), "127.0.0.1:8080"), "HTTP_ADDR"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "connector healthcheck: %s %q: %v\n", from, addr, err)
		return exitFailure
	}
	if port == "0" {
		fmt.Fprintf(stderr, "connector healthcheck: %s %q: port 0 picks a free port at start, which a health check cannot know: give the connector a fixed port\n", from, addr)
		return exitFailure
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "connector healthcheck: %s: %v\n", from, err)
		return exitFailure
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "connector healthcheck: %s: %v\n", url, err)
		return exitFailure
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "connector healthcheck: %s: HTTP %d: %s\n", url, resp.StatusCode, msg)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, msg)
	return exitOK
}
