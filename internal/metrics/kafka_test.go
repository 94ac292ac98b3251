package metrics

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// clientsOf returns the client label values of family name.
func clientsOf(s Snapshot, name string) map[string]bool {
	out := map[string]bool{}
	for _, x := range s.Series(name) {
		out[x.Labels["client"]] = true
	}
	return out
}

// TestKafkaClientsExposeEachOpenClientOnce: every open client's kprom
// series appear under its name; a closed client's gauges go, its counters
// and histograms stay at their totals, and a new client of the same name
// goes on from them (a series never goes down); one registration serves
// clients that come and go.
func TestKafkaClientsExposeEachOpenClientOnce(t *testing.T) {
	b := kafkatest.Fake(t)
	k := NewKafkaClients("test_kafka")
	reg := prometheus.NewRegistry()
	reg.MustRegister(k)
	open := func(name string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.WithHooks(k.Hooks(name)...))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kadm.NewClient(cl).BrokerMetadata(context.Background()); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	gather := func() Snapshot {
		t.Helper()
		s, err := Gather(reg)
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		return s
	}
	a, c := open("a"), open("b")
	s := gather()
	if got := clientsOf(s, "test_kafka_connects_total"); !got["a"] || !got["b"] || len(got) != 2 {
		t.Errorf("connects_total for clients %v, want a and b", got)
	}
	for name, f := range s {
		if f.GetType() != dto.MetricType_COUNTER && strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %s named like a counter", name, f.GetType())
		}
	}
	if _, ok := s.Sum("test_kafka_buffered_fetch_records"); !ok {
		t.Error("kprom's buffered_fetch_records_total gauge is not exposed as test_kafka_buffered_fetch_records")
	}
	connects := func(s Snapshot, client string) float64 {
		for _, x := range s.Series("test_kafka_connects_total") {
			if x.Labels["client"] == client {
				return x.Value
			}
		}
		return -1
	}
	before := connects(gather(), "a")
	a.Close()
	s = gather()
	if got := connects(s, "a"); got != before {
		t.Errorf("after closing a: its connects_total %v, want the total it had, %v", got, before)
	}
	for _, x := range s.Series("test_kafka_buffered_fetch_records") {
		if x.Labels["client"] == "a" {
			t.Error("after closing a: its gauges are still exposed")
		}
	}
	c.Close()
	again := open("a") // the same name again, after the first one closed
	if got := connects(gather(), "a"); got < before+1 {
		t.Errorf("a opened again and connected: connects_total %v, want more than the first a's %v", got, before)
	}
	again.Close()
	for name, f := range gather() {
		if strings.HasPrefix(name, "test_kafka_") && f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("%s (a %s) is still exposed after every client closed", name, f.GetType())
		}
	}
	if got := clientsOf(gather(), "test_kafka_connects_total"); !got["a"] || !got["b"] || len(got) != 2 {
		t.Errorf("after every client closed: connects_total for %v, want a and b at their totals", got)
	}
}

// TestAClientThatReportsWhatItsFetchesBufferIsExposedWithIt: a client whose
// hooks are given counts of its buffered fetch records and bytes (the
// source's clients, which send their own fetches) is exposed with those
// counts; a client without them keeps kprom's.
func TestAClientThatReportsWhatItsFetchesBufferIsExposedWithIt(t *testing.T) {
	b := kafkatest.Fake(t)
	k := NewKafkaClients("test_kafka")
	reg := prometheus.NewRegistry()
	reg.MustRegister(k)
	var records, bytes atomic.Int64
	for _, name := range []string{"reports", "plain"} {
		hooks := k.Hooks(name)
		if name == "reports" {
			for _, h := range hooks {
				if r, ok := h.(interface {
					ReportBufferedFetch(records, bytes func() int64)
				}); ok {
					r.ReportBufferedFetch(records.Load, bytes.Load)
				}
			}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.WithHooks(hooks...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
	}
	for _, want := range []int64{0, 42, 7} {
		records.Store(want)
		bytes.Store(1000 * want)
		s, err := Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]int64{"test_kafka_buffered_fetch_records": want, "test_kafka_buffered_fetch_bytes": 1000 * want} {
			got := map[string]float64{}
			for _, x := range s.Series(name) {
				got[x.Labels["client"]] = x.Value
			}
			if len(got) != 2 || got["reports"] != float64(want) || got["plain"] != 0 {
				t.Errorf("%s by client %v, want reports=%d and plain=0", name, got, want)
			}
		}
	}
}
