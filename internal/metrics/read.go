package metrics

import (
	"io"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is one Gather of a registry, by family name, for reading values
// back (progress lines, tests). It is not an exposition: /metrics is
// rendered by promhttp.
type Snapshot map[string]*dto.MetricFamily

// Gather gathers g once. Like prometheus.Gatherer it returns what it could
// gather along with an error from any collector that failed.
func Gather(g prometheus.Gatherer) (Snapshot, error) {
	fams, err := g.Gather()
	s := make(Snapshot, len(fams))
	for _, f := range fams {
		s[f.GetName()] = f
	}
	return s, err
}

// ParseText reads a scrape in the Prometheus text format (what /metrics
// serves to a plain HTTP client).
func ParseText(r io.Reader) (Snapshot, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}

// Series is one series of a family: its labels and its value (for a
// histogram, its number of observations).
type Series struct {
	Labels map[string]string
	Value  float64
}

// Series returns every series of the family name, in the registry's
// order (sorted by labels); none if there is no such family.
func (s Snapshot) Series(name string) []Series {
	f := s[name]
	if f == nil {
		return nil
	}
	out := make([]Series, 0, len(f.GetMetric()))
	for _, m := range f.GetMetric() {
		labels := make(map[string]string, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out = append(out, Series{Labels: labels, Value: value(f.GetType(), m)})
	}
	return out
}

// Sum returns the sum of the values of every series of name (for a
// histogram, the number of observations), and whether the family exists.
func (s Snapshot) Sum(name string) (float64, bool) {
	var sum float64
	for _, x := range s.Series(name) {
		sum += x.Value
	}
	return sum, s[name] != nil
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// Quantile estimates the q-quantile (0 <= q <= 1) of histogram name, its
// series merged, from its buckets: linear interpolation within the bucket
// the quantile falls in, as PromQL's histogram_quantile does. A quantile
// beyond the last finite bucket is that bucket's upper bound. It returns
// NaN when nothing was observed or name is not a histogram.
func (s Snapshot) Quantile(name string, q float64) float64 {
	f := s[name]
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || math.IsNaN(q) {
		return math.NaN()
	}
	cumulative := map[float64]uint64{} // upper bound -> observations <= it
	var total uint64
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		total += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			cumulative[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if total == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(cumulative))
	for b := range cumulative {
		if !math.IsInf(b, 1) {
			bounds = append(bounds, b)
		}
	}
	slices.Sort(bounds)
	rank := min(max(q, 0), 1) * float64(total)
	lower, below := 0.0, uint64(0)
	for _, upper := range bounds {
		c := cumulative[upper]
		if float64(c) >= rank && c > below {
			return lower + (upper-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = upper, c
	}
	if len(bounds) == 0 {
		return math.NaN()
	}
	return bounds[len(bounds)-1]
}
