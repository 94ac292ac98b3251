package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/pipeline"
)

// chromiumPath is Debian's chromium package's browser; scripts/test
// installs it when it is missing.
const chromiumPath = "/usr/bin/chromium"

// webJob is a stateful job (dedup, two workers) over a 3-partition topic
// on an in-process broker, checkpointing four times a second.
const webJob = `
name: web-ui
kafka: {brokers: [%q]}
source: {topics: [%q]}
checkpoint: {interval: 250ms, dir: %q}
state: {dir: %q}
pipeline:
  parallelism: 2
  transforms:
    - {type: dedup, key: id, ttl: 10m}
sink: {type: file, path: %q, roll_on_checkpoint: true}
http: {addr: "127.0.0.1:0"}
`

// webCheckpoints is how many checkpoints the page must list before the
// test looks at it.
const webCheckpoints = 8

// rendered is what the page shows, read from its DOM.
type rendered struct {
	Rows []struct {
		ID     uint64 `json:"id"`
		Status string `json:"status"`
		Reason string `json:"reason"`
		Phases string `json:"phases"`
	} `json:"rows"`
	Bars        []uint64 `json:"bars"`
	FailMarks   []uint64 `json:"failMarks"`
	Failures    []string `json:"failures"`
	Ready       string   `json:"ready"`
	ReadyReason string   `json:"readyReason"`
	State       string   `json:"state"`
	RateIn      string   `json:"rateIn"`
	Violations  []string `json:"violations"`
}

// readPage reads what the test checks from the page's DOM.
const readPage = `(() => {
  const $ = (id) => document.getElementById(id);
  return {
    rows: [...document.querySelectorAll("#history tbody tr")].map((tr) => ({ id: Number(tr.dataset.id), status: tr.className, reason: tr.querySelector("td.reason").textContent, phases: tr.querySelector("td.phases").textContent })),
    bars: [...document.querySelectorAll("#chart g.bar")].map((g) => Number(g.dataset.id)),
    failMarks: [...document.querySelectorAll("#chart g.fail-mark")].map((g) => Number(g.dataset.id)),
    failures: [...document.querySelectorAll("#failures li")].map((li) => li.textContent),
    ready: $("ready").textContent, readyReason: $("ready-reason").textContent,
    state: $("state").textContent, rateIn: $("rate-in").textContent,
    violations: window.cspViolations || [],
  };
})()`

// TestWebPageShowsTheRunningJobAndItsCheckpoints drives headless Chromium
// against a real job (in-process broker): the page at / shows the job
// ready with records flowing, its history table lists exactly the
// checkpoints /api/checkpoints returns, its chart has one bar per
// completed one, the throughput tab lists the partitions, and nothing in
// the page throws or breaks its content security policy. It saves a
// full-page screenshot as an artifact.
func TestWebPageShowsTheRunningJobAndItsCheckpoints(t *testing.T) {
	chromium := needChromium(t)
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 3)
	cfg := parseTestJob(t, webJob, b, topic)
	produceTestOrders(t, b, topic)
	gctx, stopGen := context.WithCancel(context.Background())
	generated := make(chan struct{})
	go func() { defer close(generated); generate(gctx, b.Addrs, topic, 2000, zerolog.NewTestWriter(t)) }()
	defer func() { stopGen(); <-generated }()

	base := serveTestJob(t, cfg)

	bctx, exceptions := newBrowser(t, chromium)
	start := time.Now()
	err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#history tbody tr").length >= %d && `+
			`document.getElementById("ready").textContent === "ready" && document.getElementById("rate-in").textContent !== "–"`, webCheckpoints),
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Click(chromedp.CSS("#pause")), // freeze the page, to compare it with the API
	)
	if err != nil {
		t.Fatalf("the page did not show %d checkpoints and the job ready within 60s: %v", webCheckpoints, err)
	}
	t.Logf("the page showed %d checkpoints after %v", webCheckpoints, time.Since(start).Round(time.Millisecond))
	shown, err := chromedp.Run(bctx, chromedp.Evaluate[rendered](readPage))
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstAPI(t, shown, getStatus(t, base))
	if shown.Ready != "ready" || shown.State != "running" {
		t.Errorf("the page shows readiness %q and state %q, want ready and running", shown.Ready, shown.State)
	}

	// Live again, the other tabs list the topic's partitions and draw the
	// rates, and show the config; then back to the checkpoints.
	tabs := []struct{ tab, shows, what string }{
		{"throughput", `document.querySelectorAll("#partitions tbody tr td.num").length === 12 && ` +
			`document.querySelector("#rates polyline.rate-in")?.points.length >= 5`, "the 3 partitions and 5 rates"},
		{"config", fmt.Sprintf(`document.getElementById("config").textContent.includes("name: web-ui") && document.getElementById("config").textContent.includes(%q)`, topic),
			"the config"},
		{"checkpoints", `document.querySelector("#chart g.bar")`, "the chart"},
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#pause"))); err != nil {
		t.Fatal(err)
	}
	for _, tab := range tabs {
		err := chromedp.Do(bctx,
			chromedp.Click(chromedp.CSS(`[data-tab="`+tab.tab+`"]`)),
			chromedp.Poll[chromedp.Void](tab.shows, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
		if err != nil {
			t.Errorf("the %s tab did not show %s: %v", tab.tab, tab.what, err)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		name := "webui-" + tab.tab + ".png"
		if tab.tab == "checkpoints" {
			name = "webui.png"
		}
		t.Logf("screenshot of the %s tab: %s", tab.tab, saveArtifact(t, name, png))
	}
	if shown, err = chromedp.Run(bctx, chromedp.Evaluate[rendered](readPage)); err != nil || len(shown.Violations) > 0 {
		t.Errorf("content security policy violations (%v): %v", err, shown.Violations)
	}
	if e := exceptions(); len(e) > 0 {
		t.Errorf("the page threw: %v", e)
	}
}

// checkAgainstAPI: the table shows the checkpoints the API lists, in its
// order, and the chart a bar for each completed one. The job went on
// checkpointing after the page paused, so the API is compared from the
// newest checkpoint the page shows down to the oldest (ids, and the
// outcome of those that had ended; one in progress then may have ended
// since).
func checkAgainstAPI(t *testing.T, shown rendered, st pipeline.Status) {
	t.Helper()
	if len(shown.Rows) < webCheckpoints {
		t.Fatalf("the page shows %d rows, want %d or more", len(shown.Rows), webCheckpoints)
	}
	newest, oldest := shown.Rows[0].ID, shown.Rows[len(shown.Rows)-1].ID
	var api []pipeline.CheckpointRecord
	for _, c := range st.History {
		if c.ID <= newest && c.ID >= oldest {
			api = append(api, c)
		}
	}
	var ids, apiIDs, completed, bars []uint64
	for i, r := range shown.Rows {
		ids = append(ids, r.ID)
		if r.Status == "completed" {
			completed = append(completed, r.ID)
		}
		if i < len(api) && r.Status != "in_progress" && r.Status != api[i].Status {
			t.Errorf("checkpoint %d: the page says %s, the API %s", r.ID, r.Status, api[i].Status)
		}
		// A completed checkpoint's phases name its barrier's start delay,
		// which the API has (a barrier arrives some time after its trigger).
		if i < len(api) && r.Status == "completed" && (!strings.Contains(r.Phases, "start ") || api[i].StartDelayMS <= 0) {
			t.Errorf("checkpoint %d: the page's phases %q, the API's start delay %v ms; want it shown, and above 0", r.ID, r.Phases, api[i].StartDelayMS)
		}
	}
	for _, c := range api {
		apiIDs = append(apiIDs, c.ID)
	}
	if !slices.Equal(ids, apiIDs) {
		t.Errorf("the table lists checkpoints %v; /api/checkpoints lists %v for that range", ids, apiIDs)
	}
	bars = slices.Clone(shown.Bars)
	slices.Sort(bars)
	slices.Sort(completed)
	if len(completed) == 0 || !slices.Equal(bars, completed) {
		t.Errorf("the chart has bars for %v, want one per completed checkpoint of the table: %v", bars, completed)
	}
}

func getStatus(t *testing.T, base string) pipeline.Status {
	t.Helper()
	resp, err := http.Get(base + "/api/checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st pipeline.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("/api/checkpoints: %v", err)
	}
	return st
}

// needChromium returns the browser's path and fails the test without it.
// It never skips: a test that cannot run says so.
func needChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium is not installed (%v): it renders the web page in this test. Install Debian's package with "+
			"`apt-get install -y chromium`, or run scripts/test, which does", err)
	}
	return chromiumPath
}

// newBrowser starts headless Chromium for the test, in a fresh profile,
// and stops it when the test ends. exceptions returns what the page threw
// and what it logged as errors; CSP violations are collected in the page
// (window.cspViolations).
func newBrowser(t *testing.T, path string) (ctx context.Context, exceptions func() []string) {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1360, 900),
	)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	var mu sync.Mutex
	var thrown []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			thrown = append(thrown, fmt.Sprintf("%s (%s:%d)", ev.ExceptionDetails.Text, ev.ExceptionDetails.URL, ev.ExceptionDetails.LineNumber+1))
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				thrown = append(thrown, ex.Description)
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, cmp.Or(a.Description, string(a.Value)))
				}
				thrown = append(thrown, "console.error: "+strings.Join(args, " "))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.cspViolations = []; document.addEventListener("securitypolicyviolation", (e) => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`,
	})
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(thrown)
	}
}

// saveArtifact writes data to name in $TEST_ARTIFACTS, else in the
// repository's .cache/artifacts, and returns the path.
func saveArtifact(t *testing.T, name string, data []byte) string {
	t.Helper()
	dir := os.Getenv("TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".cache", "artifacts")
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	path := filepath.Join(dir, name)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Fatalf("save artifact %s: %v", name, err)
	}
	return path
}
