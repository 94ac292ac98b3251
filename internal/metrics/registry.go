package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// kind is a metric family's TYPE.
type kind string

const (
	kindCounter   kind = "counter"
	kindGauge     kind = "gauge"
	kindHistogram kind = "histogram"
)

// Registry holds metric families by name. The zero value is not usable;
// call NewRegistry. Safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	families map[string]*family
}

// family is every series of one metric name.
type family struct {
	name    string
	help    string
	kind    kind
	buckets []float64          // histograms only
	series  map[string]*series // by rendered label set
}

// series is one metric of a family: its labels and its value holder, one
// of *Counter, *Gauge or *Histogram.
type series struct {
	labels []labelPair // sorted by key
	metric any
}

type labelPair struct{ key, value string }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{families: make(map[string]*family)}
}

// Counter returns the counter name with the given labels (alternating key,
// value pairs), creating it at zero on first use. help is used when the
// name is new.
func (r *Registry) Counter(name, help string, labels ...string) *Counter {
	s := r.lookup(name, help, kindCounter, nil, labels, func() any { return new(Counter) })
	return s.metric.(*Counter)
}

// Gauge returns the gauge name with the given labels, creating it at zero
// on first use.
func (r *Registry) Gauge(name, help string, labels ...string) *Gauge {
	s := r.lookup(name, help, kindGauge, nil, labels, func() any { return new(Gauge) })
	return s.metric.(*Gauge)
}

// Histogram returns the histogram name with the given labels, creating it
// on first use. buckets are the upper bounds, strictly increasing (+Inf is
// implicit and may be left out); nil means DefBuckets. Every series of a
// name shares the buckets of its first lookup.
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *Histogram {
	bounds := normalizeBuckets(name, buckets)
	s := r.lookup(name, help, kindHistogram, bounds, labels, func() any { return newHistogram(bounds) })
	return s.metric.(*Histogram)
}

// lookup finds or creates the series of name with labels.
func (r *Registry) lookup(name, help string, k kind, buckets []float64, labels []string, mk func() any) *series {
	mustValidName(name)
	pairs := labelPairs(name, labels)
	key := renderLabels(pairs, "", 0)

	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.families[name]
	if f == nil {
		f = &family{name: name, help: help, kind: k, buckets: buckets, series: make(map[string]*series)}
		r.families[name] = f
	}
	if f.kind != k {
		panic(fmt.Sprintf("metrics: %s is a %s, asked for as a %s", name, f.kind, k))
	}
	s := f.series[key]
	if s == nil {
		m := mk()
		if k == kindHistogram && !slices.Equal(f.buckets, buckets) {
			// Same name, other buckets: keep one bucket layout per family.
			m = newHistogram(f.buckets)
		}
		s = &series{labels: pairs, metric: m}
		f.series[key] = s
	}
	return s
}

// labelPairs turns alternating key, value arguments into pairs sorted by key.
func labelPairs(name string, kv []string) []labelPair {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("metrics: %s: odd number of label arguments %q", name, kv))
	}
	pairs := make([]labelPair, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k := kv[i]
		if !validName(k, false) || strings.HasPrefix(k, "__") || k == "le" {
			panic(fmt.Sprintf("metrics: %s: invalid label name %q", name, k))
		}
		pairs = append(pairs, labelPair{k, kv[i+1]})
	}
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(pairs); i++ {
		if pairs[i].key == pairs[i-1].key {
			panic(fmt.Sprintf("metrics: %s: label %q given twice", name, pairs[i].key))
		}
	}
	return pairs
}

func mustValidName(name string) {
	if !validName(name, true) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
}

// validName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]* (metric
// names) or [a-zA-Z_][a-zA-Z0-9_]* (label names, colon false).
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(colon && c == ':') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}
