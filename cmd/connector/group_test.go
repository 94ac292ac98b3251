package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
)

// groupMode makes a test job a member of its group, over 3 slots.
const groupMode = "instances: {mode: group, slots: 3, session_timeout: 6s}\n"

// TestAGroupMembersMetricsPassPromtool: a process in group mode serves the
// process's metrics, the group's, and each slot's job metrics with a slot
// label, all together a valid scrape (promtool), and the records' counts
// are the job's: every record once through the dedup.
func TestAGroupMembersMetricsPassPromtool(t *testing.T) {
	promtool := needPromtool(t)
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 3)
	cfg := parseTestJob(t, metricsJob+groupMode, b, topic)
	produceTestOrders(t, b, topic) // each id twice, in its one partition
	url := serveTestJob(t, cfg) + "/metrics"
	var body []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		var s metrics.Snapshot
		body, s = scrape(t, url)
		if sum(s, "connector_records_out_total") == metricsKept && sum(s, "connector_group_slots_owned") == 3 &&
			sum(s, "connector_sink_committed_files_total") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member did not process every record within 60s; last scrape:\n%s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nscrape:\n%s", err, out, body)
	}
	_, s := scrape(t, url)
	var slots []string
	for _, se := range s.Series("connector_records_in_total") {
		slots = append(slots, se.Labels["slot"])
	}
	if slices.Sort(slots); fmt.Sprint(slots) != "[0 1 2]" {
		t.Errorf("connector_records_in_total series of slots %v, want one per slot: %+v", slots, s.Series("connector_records_in_total"))
	}
	for name, want := range map[string]float64{
		"connector_records_in_total": metricsProduced, "connector_build_info": 1, "connector_group_slots_owned": 3,
		"connector_group_handover_seconds": 3, // each slot acquired once
	} {
		if v, ok := s.Sum(name); !ok || v != want {
			t.Errorf("%s = %v (present: %v), want %v", name, v, ok, want)
		}
	}
	if n := len(s.Series("connector_group_rebalance_events_total")); n != 3 {
		t.Errorf("connector_group_rebalance_events_total has %d series, want assigned, revoked and lost", n)
	}
}

// TestWebPageShowsAGroupMembersSlots: the status page of a process in
// group mode shows the job, ready, the slots the member runs, and its
// checkpoints and partitions with their slots, and throws nothing.
func TestWebPageShowsAGroupMembersSlots(t *testing.T) {
	chromium := needChromium(t)
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 3)
	cfg := parseTestJob(t, webJob+groupMode, b, topic)
	produceTestOrders(t, b, topic)
	gctx, stopGen := context.WithCancel(context.Background())
	generated := make(chan struct{})
	go func() { defer close(generated); generate(gctx, b.Addrs, topic, 2000, zerolog.NewTestWriter(t)) }()
	defer func() { stopGen(); <-generated }()
	base := serveTestJob(t, cfg)

	bctx, exceptions := newBrowser(t, chromium)
	err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.Poll[chromedp.Void](`document.getElementById("version").textContent.includes("slots 0, 1, 2 of 3") && `+
			`document.getElementById("ready").textContent === "ready" && document.getElementById("state").textContent === "running" && `+
			`document.querySelectorAll("#history tbody tr").length >= 6 && document.getElementById("rate-in").textContent !== "–"`,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)),
	)
	if err != nil {
		t.Fatalf("the page did not show the member's 3 slots, ready and running, with checkpoints, within 60s: %v", err)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#history tbody tr td:first-child")].map((td) => td.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if !strings.Contains(c, "(slot ") {
			t.Errorf("a checkpoint row without its slot: %q", c)
		}
	}
	err = chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`[data-tab="throughput"]`)),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#partitions tbody tr")].filter((tr) => tr.textContent.includes("(slot ")).length === 3`,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Errorf("the throughput tab did not list the 3 partitions with their slots: %v", err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", saveArtifact(t, "webui-group.png", png))
	if e := exceptions(); len(e) > 0 {
		t.Errorf("the page threw: %v", e)
	}
}
