package metrics

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

type reviewCloseHook struct{ fn func() }

func (h reviewCloseHook) OnClientClosed(*kgo.Client) { h.fn() }

func reviewConnects(t *testing.T, reg prometheus.Gatherer, client string) float64 {
	t.Helper()
	s, err := Gather(reg)
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, x := range s.Series("test_kafka_connects_total") {
		if x.Labels["client"] == client {
			return x.Value
		}
	}
	return 0
}

// TestReviewDiffScrapeWhileAClientClosesKeepsItsTotal: a scrape that runs
// while a client is closing, between the close hooks, keeps its total (it
// once recorded the client's series as empty when kprom's hook came first;
// the close then retired nothing and the counter went down for good).
func TestReviewDiffScrapeWhileAClientClosesKeepsItsTotal(t *testing.T) {
	b := kafkatest.Fake(t)
	k := NewKafkaClients("test_kafka")
	reg := prometheus.NewRegistry()
	reg.MustRegister(k)
	hooks := k.Hooks("a")
	var mid float64
	// A scrape between the hooks' closes (the collector's, kprom's).
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...),
		kgo.WithHooks(hooks[0], reviewCloseHook{func() { mid = reviewConnects(t, reg, "a") }}, hooks[1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).BrokerMetadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := reviewConnects(t, reg, "a")
	if before < 1 {
		t.Fatalf("connects_total{client=a} = %v before the close, want >= 1", before)
	}
	cl.Close()
	after := reviewConnects(t, reg, "a")
	if after < before {
		t.Errorf("connects_total{client=a}: %v before the close, %v during it, %v after: a counter went down", before, mid, after)
	}
}

// TestReviewDiffClientClosedDuringCollectIsNotCountedTwice: a client that
// closes after Collect listed the open clients but before its registry's
// series were summed is counted once in that scrape (it was counted twice:
// its gathered series and its retired last scrape, and the next scrape
// went down).
func TestReviewDiffClientClosedDuringCollectIsNotCountedTwice(t *testing.T) {
	b := kafkatest.Fake(t)
	k := NewKafkaClients("test_kafka")
	reg := prometheus.NewRegistry()
	reg.MustRegister(k)
	hooks := k.Hooks("a")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.WithHooks(hooks...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).BrokerMetadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := reviewConnects(t, reg, "a") // the client's last scrape
	var once sync.Once
	closeNow := func() int64 { once.Do(cl.Close); return 0 }
	for _, h := range hooks {
		if c, ok := h.(*kafkaClient); ok {
			c.ReportBufferedFetch(closeNow, closeNow) // called by Collect, between the listing and the sums
		}
	}
	during := reviewConnects(t, reg, "a")
	after := reviewConnects(t, reg, "a")
	if during != before || after != before {
		t.Errorf("connects_total{client=a}: %v before, %v in the scrape the client closed during, %v after; want %v throughout", before, during, after, before)
	}
}
