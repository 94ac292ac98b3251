package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/source"
)

// lagOf returns Lag as "partition:lag" strings, sorted.
func lagOf(s *Source) []string {
	var out []string
	for _, l := range s.Lag() {
		out = append(out, fmt.Sprintf("%d:%d", l.Partition, l.Records))
	}
	slices.Sort(out)
	return out
}

// TestLagIsTheHighWatermarkMinusTheNextOffset: known from Open on (the
// source lists the high watermarks), updated by the reader's fetches, and
// by the periodic listing for partitions the reader has nothing to fetch
// from.
func TestLagIsTheHighWatermarkMinusTheNextOffset(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 2, 10)
	s, err := Open(context.Background(), testConfig(b, topic), nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var _ source.Lagger = s
	if got := lagOf(s); !slices.Equal(got, []string{"0:5", "1:5"}) {
		t.Errorf("lag after Open = %v, want 5 records on each partition", got)
	}
	rec, stop := runReader(t, s.readers[0])
	waitFor(t, "10 records", func() bool { return rec.count() == 10 })
	waitFor(t, "no lag", func() bool { return slices.Equal(lagOf(s), []string{"0:0", "1:0"}) })
	stop()
	produce(t, b, topic, 2, 6)
	s.refreshLag(context.Background())
	if got := lagOf(s); !slices.Equal(got, []string{"0:3", "1:3"}) {
		t.Errorf("lag after 6 more records and a listing = %v, want 3 on each partition", got)
	}
}

// TestEveryClientGetsTheHooksOfItsName: the admin client and each reader's
// client are made with the hooks Options.Hooks returns for their names.
func TestEveryClientGetsTheHooksOfItsName(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	var mu sync.Mutex
	var opened []string
	cfg := testConfig(b, topic)
	cfg.Readers = 2
	cfg.Hooks = func(name string) []kgo.Hook {
		return []kgo.Hook{onNewClient(func() {
			mu.Lock()
			opened = append(opened, name)
			mu.Unlock()
		})}
	}
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range s.readers {
		_, stop := runReader(t, r)
		defer stop()
	}
	waitFor(t, "three clients", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(opened) == 3
	})
	slices.Sort(opened)
	if want := []string{"source-0", "source-1", "source-admin"}; !slices.Equal(opened, want) {
		t.Errorf("clients opened: %v, want %v", opened, want)
	}
}

type onNewClient func()

func (f onNewClient) OnNewClient(*kgo.Client) { f() }
