package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// call runs the CLI in process and returns its exit code and output.
func call(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidateAcceptsTheExampleConfig(t *testing.T) {
	code, out, errOut := call(t, "validate", "--config", "../../config.yaml")
	if code != 0 || out != "config OK: ../../config.yaml\n" || errOut != "" {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func TestValidatePrintShowsEffectiveConfigWithoutSecrets(t *testing.T) {
	t.Setenv("KAFKA_PASSWORD", "s3cret-value")
	path := writeFile(t, "job.yaml", `name: orders
kafka:
  brokers: [localhost:9092]
  sasl: {mechanism: SCRAM-SHA-256, username: me, password: "${KAFKA_PASSWORD}"}
source: {topics: [orders]}
sink: {type: stdout}
`)
	code, out, errOut := call(t, "validate", "--config", path, "--print")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "s3cret-value") || !strings.Contains(out, "password: '***'") {
		t.Errorf("the dump must redact the password:\n%s", out)
	}
	for _, want := range []string{"group: orders", "interval: 1s", "addr: 127.0.0.1:8080"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dump lacks %q:\n%s", want, out)
		}
	}
	// Only the dump on stdout: saved, it loads again.
	if strings.Contains(out, "config OK") || errOut != "config OK: "+path+"\n" {
		t.Errorf("with --print, %q goes to stderr, not stdout; stderr %q", "config OK", errOut)
	}
	if code, _, errOut := call(t, "validate", "--config", writeFile(t, "dump.yaml", out)); code != 0 {
		t.Errorf("the dump does not load again: exit %d: %s", code, errOut)
	}
}

// TestValidateRejectsBadConfigWithExitTwo: DESIGN.md's contract, exit code 2
// and every problem on stderr as file:line: key: message.
func TestValidateRejectsBadConfigWithExitTwo(t *testing.T) {
	path := writeFile(t, "bad.yaml", `name: orders
kafka: {brokers: [localhost:9092]}
source:
  topicz: [orders]
checkpoint:
  interval: 5 seconds
sink: {type: stdout}
`)
	code, out, errOut := call(t, "validate", "--config", path)
	want := path + ":3: source.topics: at least one topic is required\n" +
		path + ":4: source.topicz: unknown key for source type kafka (did you mean topics?)\n" +
		path + ":6: checkpoint.interval: \"5 seconds\" is not a duration\n"
	if code != 2 || out != "" || errOut != want {
		t.Errorf("exit %d\nstdout: %q\nstderr:\n%s\nwant stderr:\n%s", code, out, errOut, want)
	}
}

// TestValidateAndRunRefuseASinkKindThisBuildCannotRun: a kind the contract
// names but this build has not (yet) is a bad config: exit 2 with file:line,
// for validate and for run alike, before anything starts.
func TestValidateAndRunRefuseASinkKindThisBuildCannotRun(t *testing.T) {
	path := writeFile(t, "bigquery-sink.yaml", `name: orders
kafka: {brokers: [localhost:9092]}
source: {topics: [orders]}
sink:
  type: bigquery
  table: orders
`)
	want := path + ":5: sink.type: unknown sink type \"bigquery\": this build runs file, kafka, postgres, s3 or stdout\n"
	for _, cmd := range []string{"validate", "run"} {
		code, out, errOut := call(t, cmd, "--config", path)
		if code != 2 || out != "" || errOut != want {
			t.Errorf("%s: exit %d\nstdout: %q\nstderr:\n%s\nwant stderr:\n%s", cmd, code, out, errOut, want)
		}
	}
}

func TestValidateOfMissingFileExitsTwo(t *testing.T) {
	code, _, errOut := call(t, "validate", "--config", "no-such.yaml")
	if code != 2 || errOut != "config: open no-such.yaml: no such file or directory\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"validate", "--no-such-flag"},
		{"validate", "extra-arg"},
		{"version", "--config", "x"},
	} {
		code, out, errOut := call(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "usage: connector") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a usage on stderr", args, code, out, errOut)
		}
	}
	if _, _, errOut := call(t, "frobnicate"); !strings.HasPrefix(errOut, "connector: unknown command \"frobnicate\"\n") {
		t.Errorf("unknown command: stderr %q", errOut)
	}
}

func TestHelpListsEveryCommandOnStdout(t *testing.T) {
	code, out, _ := call(t, "help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for name := range commands {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("help lacks %q:\n%s", name, out)
		}
	}
	// Help asked for goes to stdout, exit 0, for every command and its
	// subcommands: `connector run -h | less` shows it.
	asks := [][]string{{"checkpoints", "list", "-h"}, {"checkpoints", "show", "--help"}, {"txns", "list", "-h"}, {"txns", "abort", "-help"}}
	for name := range commands {
		asks = append(asks, []string{name, "-h"}, []string{name, "--help"})
	}
	for _, args := range asks {
		code, out, errOut := call(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "usage: connector "+args[0]) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout only", args, code, out, errOut)
		}
	}
}

func TestVersionNamesConnectorGoFranzGoAndPebble(t *testing.T) {
	code, out, errOut := call(t, "version")
	want := regexp.MustCompile(`^connector dev\ngo go1\.\d+\S*\nfranz-go \S+\npebble \S+\n$`)
	if code != 0 || errOut != "" || !want.MatchString(out) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
	t.Logf("\n%s", out)
}

// TestKindsListsWhatThisBuildRuns: every kind validate accepts, by section.
func TestKindsListsWhatThisBuildRuns(t *testing.T) {
	code, out, _ := call(t, "kinds")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"source:\n  kafka ", "(default)", "sink:\n  file ", "\n  stdout ", "transform:\n  dedup ", "\n  filter ", "\n  project "} {
		if !strings.Contains(out, want) {
			t.Errorf("kinds lacks %q:\n%s", want, out)
		}
	}
}

// --version is version; dev refuses a negative --rate before anything
// starts; dev's progress line says "p99 -" before the first checkpoint.
func TestVersionFlagAndDevArgumentsAndFirstProgressLine(t *testing.T) {
	_, want, _ := call(t, "version")
	if code, out, _ := call(t, "--version"); code != 0 || out != want {
		t.Errorf("--version: exit %d, stdout %q; want 0 and %q", code, out, want)
	}
	code, out, errOut := call(t, "dev", "--rate", "-5")
	if code != 2 || out != "" || !strings.Contains(errOut, "--rate -5: must be 0") {
		t.Errorf("dev --rate -5: exit %d, stdout %q, stderr %q; want 2 and the flag named", code, out, errOut)
	}
	if got := p99Text(read(prometheus.NewRegistry())); got != "-" {
		t.Errorf("p99 before any checkpoint = %q, want -", got)
	}
}
