package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/internal/syncbuf"
)

const (
	dashboardFile = "../../deploy/grafana/connector-dashboard.json"
	alertsFile    = "../../deploy/prometheus/connector-alerts.yaml"
)

// query is one PromQL expression of the dashboard or the alert rules.
type query struct {
	where string // "dashboard panel 3 \"Consumer lag\" B", "alert ConnectorJobRestarted"
	expr  string
	panel bool // a panel's target: Grafana's variables in it
}

// TestDashboardAndAlertsQueryOnlyExportedMetrics: every metric that a
// panel, a template variable of the Grafana dashboard or an alert rule
// queries is in /metrics of a running job: examples/kafka-to-kafka.yaml
// through `connector dev`, whose kafka sink, dedup state and committed
// transactions make every family the dashboard shows appear.
func TestDashboardAndAlertsQueryOnlyExportedMetrics(t *testing.T) {
	queries := append(dashboardQueries(t), alertQueries(t)...)
	s := scrapeDev(t, "kafka-to-kafka.yaml")
	for _, q := range queries {
		for _, name := range promMetricNames(q.expr) {
			if !exported(s, name) {
				t.Errorf("%s queries %s, which /metrics does not export: %s", q.where, name, q.expr)
			}
		}
	}
}

// TestDashboardQueriesAreValidPromQL: promtool accepts every panel's
// query (Grafana's variables replaced by values), and each selects
// through the dashboard's $job and $instance.
func TestDashboardQueriesAreValidPromQL(t *testing.T) {
	promtool := needPromtool(t)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range dashboardQueries(t) {
		if !q.panel {
			continue
		}
		if !strings.Contains(q.expr, `job=~"$job"`) || !strings.Contains(q.expr, `instance=~"$instance"`) {
			t.Errorf("%s does not select by $job and $instance: %s", q.where, q.expr)
		}
		expr := regexp.MustCompile(`\$__\w+`).ReplaceAllString(q.expr, "5m")
		expr = regexp.MustCompile(`\$\w+`).ReplaceAllString(expr, ".*")
		b, _ := json.Marshal(expr) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s # %s\n", i, b, q.where)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, rules.String())
	}
}

// TestPromMetricNamesFindsMetricsOnly: the tokenizer the tests above rely
// on takes metric names only (not functions, keywords, label names and
// values, durations), and a misspelt name is reported as not exported.
func TestPromMetricNamesFindsMetricsOnly(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`histogram_quantile(0.99, sum by (job, le) (rate(a_seconds_bucket{job=~"$job", le!="+Inf"}[$__rate_interval])))`, []string{"a_seconds_bucket"}},
		{`time() - max without (worker) (a_seconds offset 5m) > 1e3 and on (job) group_left (version) b_info`, []string{"a_seconds", "b_info"}},
		{`sum(rate(x_total[5m])) by (instance) / ignoring(topic) count(y) unless z`, []string{"x_total", "y", "z"}},
		{`label_values(connector_build_info{job=~"$job"}, instance)`, []string{"connector_build_info"}},
		{`changes(p{a="b(c)"}[15m:1m]) > bool 0 or vector(1)`, []string{"p"}},
	} {
		if got := promMetricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("promMetricNames(%s) = %v, want %v", c.expr, got, c.want)
		}
	}
	s := metrics.Snapshot{
		"connector_records_in_total":            {Type: dto.MetricType_COUNTER.Enum()},
		"connector_checkpoint_duration_seconds": {Type: dto.MetricType_HISTOGRAM.Enum()},
	}
	for name, want := range map[string]bool{
		"connector_records_in_total": true, "connector_checkpoint_duration_seconds_bucket": true, "connector_checkpoint_duration_seconds_count": true,
		"connector_record_in_total": false, "connector_records_in_total_bucket": false, "connector_checkpoint_duration_bucket": false,
	} {
		if exported(s, name) != want {
			t.Errorf("exported(%s) = %v, want %v", name, !want, want)
		}
	}
}

// dashboardQueries are the queries of the dashboard's panels and of its
// template variables (label_values(<selector>, <label>): the selector).
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	var d struct {
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"` // a string, or {"query": "..."} in newer Grafana
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readAll(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("dashboard panel %d %q %s", p.ID, p.Title, tg.RefID), tg.Expr, true})
		}
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		qs = append(qs, query{where: "dashboard variable $" + v.Name, expr: q})
	}
	if !vars["job"] || !vars["instance"] || len(qs) < 10 {
		t.Fatalf("%s: template variables %v, %d queries: want $job, $instance and the panels", dashboardFile, vars, len(qs))
	}
	return qs
}

// alertQueries are the expressions of the alert rules.
func alertQueries(t *testing.T) []query {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(readAll(t, alertsFile), &f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var qs []query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{where: "alert " + r.Alert, expr: r.Expr})
		}
	}
	if len(qs) == 0 {
		t.Fatalf("%s has no rules", alertsFile)
	}
	return qs
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	// What holds no metric name, removed before the names are taken:
	// strings (label values, Grafana's "$job"), label matchers, ranges and
	// subqueries, and the label lists of by, without, on, ignoring,
	// group_left and group_right.
	promNotNames = []*regexp.Regexp{
		regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`"),
		regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`),
		regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	}
	// A token: a number or duration, a Grafana variable, or an identifier
	// with the "(" that makes it a function or an aggregation.
	promToken    = regexp.MustCompile(`\d[\w.]*|\$\w+|[a-zA-Z_:][\w:]*(\s*\()?`)
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	}
	labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*\w+\s*\)\s*$`)
)

// promMetricNames returns the metric names a PromQL expression (or a
// Grafana label_values query) selects, in order, each once.
func promMetricNames(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		expr = m[1]
	}
	for _, re := range promNotNames {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, m := range promToken.FindAllStringSubmatch(expr, -1) {
		tok := m[0]
		if m[1] != "" || promKeywords[strings.ToLower(tok)] || tok[0] == '$' || tok[0] >= '0' && tok[0] <= '9' || slices.Contains(names, tok) {
			continue
		}
		names = append(names, tok)
	}
	return names
}

// exported reports whether name is a family of s, or a series of one: a
// histogram's _bucket, _sum and _count, a summary's _sum and _count.
func exported(s metrics.Snapshot, name string) bool {
	if s[name] != nil {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f := s[strings.TrimSuffix(name, suffix)]; f != nil && strings.HasSuffix(name, suffix) {
			if f.GetType() == dto.MetricType_HISTOGRAM || suffix != "_bucket" && f.GetType() == dto.MetricType_SUMMARY {
				return true
			}
		}
	}
	return false
}

// scrapeDev runs `connector dev` on an example of examples/ until its
// sink committed two transactions and its reader reported lag, scrapes
// /metrics then, and stops it.
func scrapeDev(t *testing.T, example string) metrics.Snapshot {
	t.Helper()
	path, err := filepath.Abs("../../examples/" + example)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir) // the example's data dirs are relative
	t.Setenv("HTTP_ADDR", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--config", path, "--data", filepath.Join(dir, "kafka"), "--rate", "5000"}, &out, &errOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("dev exited %d after the stop:\n%s", code, errOut.String())
		}
	}()
	status := regexp.MustCompile(`\nstatus at http://(\S+)/ `)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := status.FindStringSubmatch(out.String()); m != nil {
			_, s := scrape(t, "http://"+m[1]+"/metrics")
			if sum(s, "connector_sink_transactions_committed_total") >= 2 && len(s.Series("connector_consumer_lag_records")) > 0 {
				return s
			}
		}
		select {
		case code := <-done:
			done <- code // for the deferred wait
			t.Fatalf("dev exited %d before committing:\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two transactions committed within a minute:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
	}
}
