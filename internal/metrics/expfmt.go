package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ContentType is the HTTP Content-Type of WritePrometheus's output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WritePrometheus writes every metric in the Prometheus text exposition
// format 0.0.4: families sorted by name, each with its HELP and TYPE lines,
// then its series sorted by labels. A histogram series is rendered as
// cumulative name_bucket{le="..."} lines ending with le="+Inf", then
// name_sum and name_count.
//
// Values are read while the registry keeps updating, so the output is a
// consistent view per series, not across series.
func (r *Registry) WritePrometheus(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, f := range r.sortedFamilies() {
		writeFamily(bw, f)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

// familyView is a family's fields and series, copied under the registry lock.
type familyView struct {
	name, help string
	kind       kind
	bounds     []float64
	series     []*series // sorted by labels
}

func (r *Registry) sortedFamilies() []familyView {
	r.mu.Lock()
	defer r.mu.Unlock()
	views := make([]familyView, 0, len(r.families))
	for _, f := range r.families {
		keys := make([]string, 0, len(f.series))
		for k := range f.series {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		v := familyView{name: f.name, help: f.help, kind: f.kind, bounds: f.buckets}
		for _, k := range keys {
			v.series = append(v.series, f.series[k])
		}
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b familyView) int { return strings.Compare(a.name, b.name) })
	return views
}

// writeFamily writes one family; write errors are caught by the final Flush
// (a bufio.Writer keeps its first error).
func writeFamily(w *bufio.Writer, f familyView) {
	fmt.Fprintf(w, "# HELP %s %s\n", f.name, escapeHelp(f.help))
	fmt.Fprintf(w, "# TYPE %s %s\n", f.name, f.kind)
	for _, s := range f.series {
		switch m := s.metric.(type) {
		case *Counter:
			fmt.Fprintf(w, "%s%s %d\n", f.name, renderLabels(s.labels, "", 0), m.Value())
		case *Gauge:
			fmt.Fprintf(w, "%s%s %s\n", f.name, renderLabels(s.labels, "", 0), formatFloat(m.Value()))
		case *Histogram:
			cumulative, sum, count := m.snapshot()
			for i, c := range cumulative {
				le := math.Inf(1)
				if i < len(m.bounds) {
					le = m.bounds[i]
				}
				fmt.Fprintf(w, "%s_bucket%s %d\n", f.name, renderLabels(s.labels, "le", le), c)
			}
			labels := renderLabels(s.labels, "", 0)
			fmt.Fprintf(w, "%s_sum%s %s\n", f.name, labels, formatFloat(sum))
			fmt.Fprintf(w, "%s_count%s %d\n", f.name, labels, count)
		}
	}
}

// renderLabels renders {k="v",...}, or "" for no labels. With extra set, a
// last label extra=formatFloat(extraValue) is appended (histograms' le).
func renderLabels(pairs []labelPair, extra string, extraValue float64) string {
	if len(pairs) == 0 && extra == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.key)
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(p.value))
		b.WriteByte('"')
	}
	if extra != "" {
		if len(pairs) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(extra)
		b.WriteString(`="`)
		b.WriteString(formatFloat(extraValue))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// formatFloat renders a sample value as the format wants: shortest
// round-tripping decimal, +Inf, -Inf or NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
