package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/connector-dev/connector/config"
)

// TestLogFormatIsJSONOffATerminalAndConsoleWhenAsked: the automatic
// format writes one JSON object per line to a pipe (a container's log, a
// collector); console writes aligned text; the command line's flags win
// over the config's log: keys; a bad flag value exits 2.
func TestLogFormatIsJSONOffATerminalAndConsoleWhenAsked(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	log := newLogger("info", config.LogAuto, w)
	log.Info().Int("duration_ms", 5).Msg("hello")
	w.Close()
	line, _ := io.ReadAll(r)
	var obj map[string]any
	if err := json.Unmarshal(line, &obj); err != nil || obj["message"] != "hello" || obj["duration_ms"] != 5.0 || obj["time"] == nil {
		t.Errorf("automatic format on a pipe: %q (%v), want one JSON object", line, err)
	}

	// logger logs a debug and an info line through a job whose log:
	// section is logSection, with a command default of defaultLevel.
	logger := func(logSection, defaultLevel string, args ...string) (string, bool) {
		t.Helper()
		job, err := config.Parse("job.yaml", []byte("name: j\nkafka: {brokers: [b:1]}\nsource: {topics: [o]}\nsink: {type: stdout}\n"+logSection), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		lf := addLogFlags(fs, defaultLevel)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		log, ok := lf.logger(job, &buf)
		log.Debug().Msg("debug line")
		log.Info().Str("partition", "orders/3").Msg("info line")
		return buf.String(), ok
	}
	out, _ := logger("log: {format: console}\n", "")
	if strings.HasPrefix(out, "{") || !strings.Contains(out, "INF info line partition=orders/3") || strings.Contains(out, "debug line") || strings.Contains(out, "\x1b[") {
		t.Errorf("console format at info, off a terminal: %q, want text without colours", out)
	}
	out, _ = logger("log: {format: console, level: info}\n", "", "--log-format", "json", "--log-level", "debug")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], `{"level":"debug"`) {
		t.Errorf("flags over the config: %q, want two JSON lines from debug up", out)
	}
	// A command's own default level (dev: warn) gives way to the file's.
	if out, _ := logger("", "warn"); out != "" {
		t.Errorf("command default warn, no log.level in the file: %q, want nothing at info", out)
	}
	if out, _ := logger("log: {level: info}\n", "warn"); !strings.Contains(out, "info line") {
		t.Errorf("command default warn, log.level info in the file: %q, want the info line", out)
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		if out, ok := logger("", "", bad...); ok || !strings.Contains(out, bad[0]) {
			t.Errorf("%q: ok %v, output %q; want refused, the flag named", bad, ok, out)
		}
	}
}

// TestDevOnABusyPortSaysSoOnceBeforeAnyBanner: when the status port is
// taken, dev prints one error naming the address and what to do, and no
// banner that would suggest the job runs.
func TestDevOnABusyPortSaysSoOnceBeforeAnyBanner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	wd, _ := os.Getwd()
	t.Chdir(dir)
	t.Setenv("HTTP_ADDR", ln.Addr().String())
	code, out, errOut := call(t, "dev", "--config", wd+"/../../config.yaml", "--data", dir+"/kafka")
	if code != exitFailure || out != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing on stdout", code, out)
	}
	if strings.Count(errOut, "http:") != 1 || !strings.Contains(errOut, "listen on "+ln.Addr().String()) || !strings.Contains(errOut, "set http.addr in the config, or HTTP_ADDR") {
		t.Errorf("stderr %q: want one http: error naming %s and the way out", errOut, ln.Addr())
	}
}
