package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/source"
)

func TestSplitOffsetsDealsEveryPartitionOnceInSharesThatDifferByOneAtMost(t *testing.T) {
	o := Offsets{}
	for p := range int32(7) {
		o.Set("b", p, int64(100+p))
	}
	for p := range int32(4) {
		o.Set("a", p, int64(p))
	}
	for _, n := range []int{1, 2, 3, 4, 11, 16} {
		shares := splitOffsets(o, n)
		if len(shares) != n {
			t.Fatalf("n=%d: %d shares", n, len(shares))
		}
		seen := Offsets{}
		least, most := o.Len(), 0
		for _, s := range shares {
			least, most = min(least, s.Len()), max(most, s.Len())
			for tp, ps := range s {
				for p, next := range ps {
					if _, dup := seen.Lookup(tp, p); dup {
						t.Errorf("n=%d: %s/%d in two shares", n, tp, p)
					}
					seen.Set(tp, p, next)
				}
			}
		}
		if most-least > 1 {
			t.Errorf("n=%d: shares of %d to %d partitions, want sizes differing by one at most", n, least, most)
		}
		if seen.String() != o.String() {
			t.Errorf("n=%d: shares hold %s, want every partition with its offset: %s", n, seen, o)
		}
	}
	// Fewer partitions than shares: the rest are empty, not missing.
	shares := splitOffsets(Offsets{"a": {0: 5, 1: 6}}, 4)
	var sizes []int
	for _, s := range shares {
		if s == nil {
			t.Fatal("a nil share")
		}
		sizes = append(sizes, s.Len())
	}
	if !slices.Equal(sizes, []int{1, 1, 0, 0}) {
		t.Errorf("2 partitions in 4 shares: sizes %v, want [1 1 0 0]", sizes)
	}
	if shares := splitOffsets(Offsets{}, 2); len(shares) != 2 || shares[0].Len()+shares[1].Len() != 0 {
		t.Errorf("no partitions in 2 shares: %v", shares)
	}
}

// clients records the clients a source makes by name (Options.Hooks), and
// which of them were closed.
type clients struct {
	mu     sync.Mutex
	opened []string
	closed map[string]bool
}

func (c *clients) hooks(name string) []kgo.Hook { return []kgo.Hook{clientHook{c, name}} }

type clientHook struct {
	c    *clients
	name string
}

func (h clientHook) OnNewClient(*kgo.Client) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.opened = append(h.c.opened, h.name)
}

func (h clientHook) OnClientClosed(*kgo.Client) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if h.c.closed == nil {
		h.c.closed = map[string]bool{}
	}
	h.c.closed[h.name] = true
}

// readers lists the reader clients opened, sorted, and those not closed.
func (c *clients) readers() (opened, open []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.opened {
		if n == "source-admin" {
			continue
		}
		opened = append(opened, n)
		if !c.closed[n] {
			open = append(open, n)
		}
	}
	slices.Sort(opened)
	return opened, open
}

// triggering is a recorder that, from Run's goroutine, triggers a
// checkpoint after every few batches, so barriers fall between the batches
// of one fetch as well as between fetches.
type triggering struct {
	*recorder
	r       *Reader
	every   int
	batches int // owned by Run's goroutine
	next    checkpoint.ID
}

func (e *triggering) Records(ctx context.Context, b []record.Record) error {
	if err := e.recorder.Records(ctx, b); err != nil {
		return err
	}
	if e.batches++; e.batches%e.every == 0 {
		e.next++
		e.r.Trigger(e.next, time.Now())
	}
	return nil
}

func runWith(t *testing.T, r *Reader, em source.Emitter) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, em) }()
	return func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("reader stopped with %v, want context.Canceled", err)
		}
	}
}

// checkOnceInOrder fails t unless rec holds, for every partition of want,
// its records 0 to want-1 exactly once and in offset order.
func checkOnceInOrder(t *testing.T, rec *recorder, want map[partitionID]int64) {
	t.Helper()
	next := map[partitionID]int64{}
	for _, x := range rec.records {
		id := partitionID{x.Topic, x.Partition}
		if x.Offset != next[id] {
			t.Fatalf("%s/%d: offset %d after %d records of it, want offset %d", x.Topic, x.Partition, x.Offset, next[id], next[id])
		}
		next[id]++
	}
	for id, n := range want {
		if next[id] != n {
			t.Errorf("%s/%d: %d records, want %d", id.topic, id.partition, next[id], n)
		}
	}
	if len(next) != len(want) {
		t.Errorf("records of %d partitions, want %d", len(next), len(want))
	}
}

// checkBarriersExact fails t unless every barrier's position is, for every
// partition, one past the last record of it emitted before the barrier, or
// 0 (where these tests start every partition) when none was.
func checkBarriersExact(t *testing.T, rec *recorder) {
	t.Helper()
	for _, br := range rec.barriers {
		want := map[partitionID]int64{}
		for _, x := range rec.records[:br.after] {
			want[partitionID{x.Topic, x.Partition}] = x.Offset + 1
		}
		for id, n := range want {
			if got, ok := br.offsets.Lookup(id.topic, id.partition); !ok || got != n {
				t.Errorf("barrier %d after %d records: %s/%d at %d (known %v), want %d", br.id, br.after, id.topic, id.partition, got, ok, n)
			}
		}
		for tp, ps := range br.offsets {
			for p, got := range ps {
				if _, ok := want[partitionID{tp, p}]; !ok && got != 0 {
					t.Errorf("barrier %d after %d records: %s/%d at %d before any record of it, want 0", br.id, br.after, tp, p, got)
				}
			}
		}
	}
}

// openFetching opens a source on topic with fetches_in_flight fetches and
// batches of 16 records, closed at the test's end, and returns its reader
// and the clients it made.
func openFetching(t *testing.T, b kafkatest.Brokers, topic string, fetches int) (*Reader, *clients) {
	t.Helper()
	cfg := testConfig(b, topic)
	cfg.BatchSize = 16
	cfg.FetchesInFlight = fetches
	cls := &clients{}
	cfg.Hooks = cls.hooks
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.readers[0], cls
}

func TestReaderWithSeveralFetchersEmitsEveryRecordOnceInOrder(t *testing.T) {
	b := kafkatest.Cluster(t)
	for _, fetches := range []int{2, 3} {
		t.Run(fmt.Sprintf("fetches_in_flight=%d", fetches), func(t *testing.T) {
			topic := kafkatest.Topic(t, b, 5)
			produce(t, b, topic, 5, 1000) // 200 per partition
			r, cls := openFetching(t, b, topic, fetches)
			em := &triggering{recorder: &recorder{}, r: r, every: 3}
			stop := runWith(t, r, em)
			waitFor(t, "1000 records", func() bool { return em.count() == 1000 })
			// Above every id em triggers. It may reach the reader before
			// em's own trigger after the last batch (em counts the batch's
			// records before it triggers): wait for it, not for it to be
			// the last barrier.
			const last = checkpoint.ID(1 << 20)
			r.Trigger(last, time.Now())
			lastIndex := func() int {
				return slices.IndexFunc(em.barriers, func(br barrierAt) bool { return br.id == last })
			}
			waitFor(t, "the last barrier", func() bool {
				em.mu.Lock()
				defer em.mu.Unlock()
				return lastIndex() >= 0
			})
			stop() // Run has returned: em may be read without its lock

			want := []string{"source-0"}
			for j := 1; j < fetches; j++ {
				want = append(want, fmt.Sprintf("source-0.%d", j))
			}
			opened, open := cls.readers()
			if !slices.Equal(opened, want) {
				t.Errorf("reader clients %v, want %v", opened, want)
			}
			if len(open) > 0 {
				t.Errorf("clients %v still open after Run returned", open)
			}
			all := map[partitionID]int64{}
			for p := range int32(5) {
				all[partitionID{topic, p}] = 200
			}
			checkOnceInOrder(t, em.recorder, all)
			checkBarriersExact(t, em.recorder)
			within := 0
			for _, br := range em.barriers {
				if br.after > 0 && br.after < 1000 {
					within++
				}
			}
			if within == 0 {
				t.Errorf("no barrier among the records (%d barriers): the claim was not tested", len(em.barriers))
			}
			if final := em.barriers[lastIndex()]; final.after != 1000 || final.offsets.Len() != 5 {
				t.Errorf("last barrier after %d records at %s, want after all 1000 at 200 on each of 5 partitions", final.after, final.offsets)
			}
		})
	}
}

// TestReaderWithFewerPartitionsThanFetchesGetsAFetcherPerAddedPartition: a
// reader starts with no more clients than partitions, and partitions added
// while it runs get clients of their own up to fetches_in_flight; every
// record, before and after, is read once and in order.
func TestReaderWithFewerPartitionsThanFetchesGetsAFetcherPerAddedPartition(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 100)
	r, cls := openFetching(t, b, topic, 3)
	em := &triggering{recorder: &recorder{}, r: r, every: 2}
	stop := runWith(t, r, em)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	waitFor(t, "100 records", func() bool { return em.count() == 100 })
	if opened, _ := cls.readers(); !slices.Equal(opened, []string{"source-0"}) {
		t.Fatalf("one partition: reader clients %v, want [source-0]", opened)
	}

	adm := kafkatest.Admin(t, b)
	if _, err := adm.CreatePartitions(context.Background(), 4, topic); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "five partitions in metadata", func() bool {
		md, err := adm.Metadata(context.Background(), topic)
		return err == nil && len(md.Topics[topic].Partitions) == 5
	})
	produce(t, b, topic, 5, 500) // 100 more in each partition
	// What Discover hands the reader: the new partitions at their start.
	if err := r.add(context.Background(), Offsets{topic: {1: 0, 2: 0, 3: 0, 4: 0}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "600 records", func() bool { return em.count() == 600 })
	stop()
	stop = nil

	opened, open := cls.readers()
	if want := []string{"source-0", "source-0.1", "source-0.2"}; !slices.Equal(opened, want) {
		t.Errorf("after 4 partitions were added: reader clients %v, want %v", opened, want)
	}
	if len(open) > 0 {
		t.Errorf("clients %v still open after Run returned", open)
	}
	checkOnceInOrder(t, em.recorder, map[partitionID]int64{
		{topic, 0}: 200, {topic, 1}: 100, {topic, 2}: 100, {topic, 3}: 100, {topic, 4}: 100,
	})
	checkBarriersExact(t, em.recorder)
	if len(em.barriers) == 0 {
		t.Error("no barrier: the positions were not tested")
	}
}

func TestAddedPartitionsGoToTheFetchersWithTheFewest(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	for _, c := range []struct {
		name    string
		fetches int
		start   Offsets
		add     Offsets
		want    []int // partitions per fetcher
	}{
		{"none at start", 2, Offsets{}, Offsets{"t": {0: 0, 1: 0, 2: 0}}, []int{2, 1}},
		{"one at start", 3, Offsets{"t": {0: 0}}, Offsets{"t": {1: 0, 2: 0, 3: 0, 4: 0}}, []int{2, 2, 1}},
		{"full", 2, Offsets{"t": {0: 0, 1: 0, 2: 0}}, Offsets{"u": {0: 0, 1: 0, 2: 0}}, []int{3, 3}},
		{"one fetch", 1, Offsets{"t": {0: 0}}, Offsets{"t": {1: 0}}, []int{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(b, topic).withDefaults()
			cfg.FetchesInFlight = c.fetches
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f, err := startFetchers(ctx, 0, cfg, fetchPartitionFloor, c.start, nil, nil, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer f.close()
			if err := f.add(c.add); err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, fr := range f.all {
				got = append(got, fr.parts)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%d partitions then %d added, fetches_in_flight %d: partitions per fetcher %v, want %v",
					c.start.Len(), c.add.Len(), c.fetches, got, c.want)
			}
		})
	}
}

// suspending is a recorder that, from Run's goroutine, makes checkpoint 1
// the final one and triggers it after its third batch: the reader is
// suspended in the middle of a fetch while its other fetchers' fetches are
// on their way.
type suspending struct {
	*recorder
	r       *Reader
	batches int // owned by Run's goroutine
}

func (e *suspending) Records(ctx context.Context, b []record.Record) error {
	if err := e.recorder.Records(ctx, b); err != nil {
		return err
	}
	if e.batches++; e.batches == 3 {
		e.r.Suspend(1)
		e.r.Trigger(1, time.Now())
	}
	return nil
}

func TestASuspendedReaderDropsTheFetchesOfEveryFetcherAfterTheFinalBarrier(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 5)
	produce(t, b, topic, 5, 1000)
	cfg := testConfig(b, topic)
	cfg.BatchSize = 16
	cfg.FetchesInFlight = 3
	s, err := Open(context.Background(), cfg, nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.readers[0]
	em := &suspending{recorder: &recorder{}, r: r}
	stop := runWith(t, r, em)
	barriers := func(n int) func() bool {
		return func() bool { em.mu.Lock(); defer em.mu.Unlock(); return len(em.barriers) == n }
	}
	waitFor(t, "the final barrier", barriers(1))
	produce(t, b, topic, 5, 500)
	r.Trigger(2, time.Now()) // a retried final checkpoint
	waitFor(t, "barrier 2", barriers(2))
	stop()

	final, retried := em.barriers[0], em.barriers[1]
	if final.id != 1 || final.after != 3*16 || len(em.records) != final.after {
		t.Errorf("%d records emitted, %d before barrier %d: want 48 before it and none after", len(em.records), final.after, final.id)
	}
	if retried.offsets.String() != final.offsets.String() {
		t.Errorf("barrier 2 at %s, barrier 1 at %s: want the same position", retried.offsets, final.offsets)
	}
	checkBarriersExact(t, em.recorder)
}
