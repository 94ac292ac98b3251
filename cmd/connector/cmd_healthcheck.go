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
		summary: "exit 0 when the connector on --addr answers /healthz with 200 (a container's HEALTHCHECK)",
		run:     runHealthcheck,
	})
}

// runHealthcheck GETs /healthz of the connector at --addr (default: the
// HTTP_ADDR environment variable, else 127.0.0.1:8080; a wildcard host is
// asked on loopback) and exits 0 on 200, 1 otherwise, printing the answer.
// It needs no shell or curl, so an image FROM scratch can use it.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("healthcheck", "", stdout, stderr)
	addr := fs.String("addr", cmp.Or(os.Getenv("HTTP_ADDR"), "127.0.0.1:8080"), "host:port of the connector's HTTP server")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "connector healthcheck: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "connector healthcheck: %v\n", err)
		return exitUsage
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
