package kafka

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/metrics"
	"github.com/connector-dev/connector/internal/syncbuf"
)

// readAllOnce reads topic's partitions (n records in each) with one
// reader logging to logs (its clients with hooks, if not nil), calls
// running (if not nil) before it stops the reader, and checks that each
// record comes once and in order.
func readAllOnce(t *testing.T, b kafkatest.Brokers, topic string, partitions int32, n int64, logs *syncbuf.Buffer, hooks func(string) []kgo.Hook, running func()) {
	t.Helper()
	cfg := testConfig(b, topic)
	cfg.Readers, cfg.Hooks = 1, hooks
	s := openSourceLogging(t, cfg, zerolog.New(logs))
	rec, stop := runReader(t, s.readers[0])
	total := int(partitions) * int(n)
	waitFor(t, "every record", func() bool { return rec.count() == total })
	if running != nil {
		running()
	}
	stop()
	want := map[partitionID]int64{}
	for p := range partitions {
		want[partitionID{topic, p}] = n
	}
	checkOnceInOrder(t, rec, want)
}

// TestAClusterBeforeTopicIDsIsFetchedByName: a Kafka 2.7 broker has no
// topic IDs in its metadata and no Fetch v13: the reader fetches by topic
// name with the client it has, and reads every record once.
func TestAClusterBeforeTopicIDsIsFetchedByName(t *testing.T) {
	_, b := fakeCluster(t, 1, kfake.MaxVersions(kversion.V2_7_0()))
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 2, 200)
	logs := &syncbuf.Buffer{}
	readAllOnce(t, b, topic, 2, 100, logs, nil, nil)
	if logs.Count("fetching by topic name") != 0 {
		t.Errorf("the client was replaced although the broker speaks no Fetch v13; log:\n%s", logs.String())
	}
}

// clusterWithoutTopicIDs starts a one-broker kfake cluster whose metadata
// has no topic IDs (Metadata v9 at most) but that speaks Fetch v13, with a
// topic of partitions holding n records in all.
func clusterWithoutTopicIDs(t *testing.T, partitions, n int) (*kfake.Cluster, kafkatest.Brokers, string) {
	t.Helper()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.Metadata.Int16(), 9) // the last without topic IDs
	c, b := fakeCluster(t, 1, kfake.MaxVersions(versions))
	topic := kafkatest.Topic(t, b, int32(partitions))
	produce(t, b, topic, partitions, n)
	return c, b, topic
}

// TestAClusterWithoutTopicIDsIsFetchedByNameOnANewerFetch: a broker whose
// metadata has no topic IDs but that speaks Fetch v13 (a new Kafka on an
// inter-broker protocol before 2.8) would answer UNKNOWN_TOPIC_ID to a
// Fetch that gives the topic by ID: the fetcher's client is replaced by one
// that sends Fetch v12 at most, and every record is read once.
func TestAClusterWithoutTopicIDsIsFetchedByNameOnANewerFetch(t *testing.T) {
	c, b, topic := clusterWithoutTopicIDs(t, 2, 200)
	var (
		mu      sync.Mutex
		byID    int
		newer   int
		fetches int
	)
	c.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		fetches++
		if req.GetVersion() >= 13 {
			newer++
			for _, rt := range req.(*kmsg.FetchRequest).Topics {
				if rt.TopicID != [16]byte{} {
					byID++
				}
			}
		}
		return nil, nil, false
	})
	logs := &syncbuf.Buffer{}
	m := newClientMetrics(t)
	readAllOnce(t, b, topic, 2, 100, logs, m.k.Hooks, func() {
		// The client replaced was closed before it fetched anything.
		if v := m.sum("fetch_bytes_total", "source-0"); v == 0 {
			t.Error("the client that replaced the fetcher's counts no fetched bytes: its hooks are not fed")
		}
	})
	if logs.Count("fetching by topic name (Fetch v12)") == 0 {
		t.Errorf("the fetcher did not replace its client; log:\n%s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if newer != 0 || byID != 0 || fetches == 0 {
		t.Errorf("%d fetches reached the broker, %d of version 13 or more (%d topics by ID); want some, all of version 12 at most", fetches, newer, byID)
	}
}

// TestPartitionsTakeTurnsAtTheFrontOfAFetch: each request of a session
// puts another partition first (a broker stretches a partition's share to
// a whole batch only for the first partition with data), so over as many
// requests as partitions, each is first once.
func TestPartitionsTakeTurnsAtTheFrontOfAFetch(t *testing.T) {
	c, b := fakeCluster(t, 1)
	topic := kafkatest.Topic(t, b, 3)
	var (
		mu     sync.Mutex
		firsts []int32
	)
	c.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r := req.(*kmsg.FetchRequest); len(r.Topics) > 0 && len(r.Topics[0].Partitions) == 3 {
			mu.Lock()
			firsts = append(firsts, r.Topics[0].Partitions[0].Partition)
			mu.Unlock()
		}
		return nil, nil, false
	})
	cfg := testConfig(b, topic)
	cfg.Readers, cfg.FetchesInFlight = 1, 1
	s := openSource(t, cfg)
	_, stop := runReader(t, s.readers[0])
	// An empty topic: each fetch waits fetchMaxWait for data, so the
	// requests come one after another.
	waitFor(t, "six fetches of the three partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(firsts) >= 6
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i+2 < 6; i++ {
		seen := map[int32]bool{firsts[i]: true, firsts[i+1]: true, firsts[i+2]: true}
		if len(seen) != 3 {
			t.Fatalf("the first partitions of the fetches were %v: three fetches in a row from the %dth put %d partitions first, want each of the 3", firsts, i+1, len(seen))
		}
	}
}

// waits returns the backoffs (ms) that the fetcher's "partitions wait for a
// leader" lines of logs give, in order.
func waits(t *testing.T, logs *syncbuf.Buffer) []int64 {
	t.Helper()
	var out []int64
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if !strings.Contains(line, "partitions wait for a leader") {
			continue
		}
		var e struct {
			Backoff *int64 `json:"backoff_ms"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Backoff == nil {
			t.Fatalf("a wait's log line without its backoff (%v): %s", err, line)
		}
		out = append(out, *e.Backoff)
	}
	return out
}

// TestTheLookupsBackoffStartsAfreshAfterARoundThatRanWell: while a leader
// fails every fetch, the waits before looking it up again grow; once it
// answers and the fetcher has run well for longer than the last wait, the
// next failure waits 100 ms again, not twice the wait of the outage before
// (which had reached 10 s after a long one).
func TestTheLookupsBackoffStartsAfreshAfterARoundThatRanWell(t *testing.T) {
	c, b := fakeCluster(t, 1)
	topic := kafkatest.Topic(t, b, 1)
	var failing atomic.Bool
	c.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if failing.Load() {
			return nil, errors.New("the leader fails"), true
		}
		return nil, nil, false
	})
	cfg := testConfig(b, topic)
	cfg.Readers, cfg.FetchesInFlight = 1, 1
	logs := &syncbuf.Buffer{}
	s := openSourceLogging(t, cfg, zerolog.New(logs))
	rec, stop := runReader(t, s.readers[0])
	defer stop()

	failing.Store(true)
	waitFor(t, "the waits to grow to 400 ms", func() bool { return slices.Max(append(waits(t, logs), 0)) >= 400 })
	failing.Store(false)
	produce(t, b, topic, 1, 10)
	waitFor(t, "the 10 records, once the leader answers", func() bool { return rec.count() == 10 })
	// The round that read them began before they came; it has run well
	// for longer than the last wait once that much more time passed.
	grown := waits(t, logs)
	last := time.Duration(slices.Max(grown)) * time.Millisecond
	healthy := time.Now()
	waitFor(t, "the healthy round to outlast the last wait", func() bool { return time.Since(healthy) > last })

	failing.Store(true)
	waitFor(t, "the next wait", func() bool { return len(waits(t, logs)) > len(grown) })
	if next := waits(t, logs)[len(grown)]; next != 100 {
		t.Errorf("the first wait after a round that ran well for %v (the waits before: %v ms) is %d ms, want 100", time.Since(healthy), grown, next)
	}
}

// clientMetrics collects the client metrics of the clients whose hooks
// it gives (internal/metrics, as the runtime does), named test_kafka_*.
type clientMetrics struct {
	t   *testing.T
	k   *metrics.KafkaClients
	reg *prometheus.Registry
}

func newClientMetrics(t *testing.T) *clientMetrics {
	m := &clientMetrics{t: t, k: metrics.NewKafkaClients("test_kafka"), reg: prometheus.NewRegistry()}
	m.reg.MustRegister(m.k)
	return m
}

// series returns client's series of test_kafka_<name>, gathered now.
func (m *clientMetrics) series(name, client string) []float64 {
	m.t.Helper()
	s, err := metrics.Gather(m.reg)
	if err != nil {
		m.t.Fatal(err)
	}
	var out []float64
	for _, x := range s.Series("test_kafka_" + name) {
		if x.Labels["client"] == client {
			out = append(out, x.Value)
		}
	}
	return out
}

// sum is the sum of client's series of test_kafka_<name>.
func (m *clientMetrics) sum(name, client string) float64 {
	m.t.Helper()
	var v float64
	for _, x := range m.series(name, client) {
		v += x
	}
	return v
}

// value is client's series of test_kafka_<name>, if it has one.
func (m *clientMetrics) value(name, client string) (float64, bool) {
	m.t.Helper()
	if xs := m.series(name, client); len(xs) > 0 {
		return xs[0], true
	}
	return 0, false
}

// TestTheClientMetricsCountTheRecordsWaitingForRun: a source client's
// buffered fetch records and bytes (connector_kafka_buffered_fetch_*, which
// kprom would take from franz-go's consumer and leave at 0) are what the
// responses its sessions fetched and Run has not taken hold: all 100
// records while nobody takes them, none once they are taken.
func TestTheClientMetricsCountTheRecordsWaitingForRun(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 100)
	m := newClientMetrics(t)
	cfg := testConfig(b, topic).withDefaults()
	cfg.Hooks = m.k.Hooks
	ctx, f := fetchPartitionZero(t, cfg, topic)
	waitFor(t, "100 buffered fetch records", func() bool { v, _ := m.value("buffered_fetch_records", "source-0"); return v == 100 })
	if v, _ := m.value("buffered_fetch_bytes", "source-0"); v < 61 {
		t.Errorf("%v buffered fetch bytes for 100 records, want their batches' bytes (61 of header each)", v)
	}
	rec := collect(ctx, t, f)
	waitFor(t, "the 100 records taken", func() bool { return rec.count() == 100 })
	waitFor(t, "no buffered fetch records", func() bool {
		r, ok := m.value("buffered_fetch_records", "source-0")
		b, _ := m.value("buffered_fetch_bytes", "source-0")
		return ok && r == 0 && b == 0
	})
}

// TestAResponseDroppedIsNoLongerCountedAsBuffered: a response that waits
// for Run when its session stops (partitions were added) is dropped and
// fetched again; the buffered count holds the one waiting now, not both.
func TestAResponseDroppedIsNoLongerCountedAsBuffered(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 2)
	produce(t, b, topic, 1, 100) // partition 0 only
	m := newClientMetrics(t)
	cfg := testConfig(b, topic).withDefaults()
	cfg.FetchesInFlight = 1
	cfg.Hooks = m.k.Hooks
	var waits atomic.Int64 // responses that began to wait for Run
	hook := func() { waits.Add(1) }
	testHookHandingOn.Store(&hook)
	t.Cleanup(func() { testHookHandingOn.Store(nil) })
	_, f := fetchPartitionZero(t, cfg, topic)
	waitFor(t, "partition 0's response to wait", func() bool { return waits.Load() == 1 })
	if err := f.add(Offsets{topic: {1: 0}}); err != nil {
		t.Fatal(err)
	}
	// The session stops and drops its response; the next round fetches
	// partition 0's records again, and they wait.
	waitFor(t, "a second response to wait", func() bool { return waits.Load() == 2 })
	if v, _ := m.value("buffered_fetch_records", "source-0"); v != 100 {
		t.Errorf("%v buffered fetch records with one response of 100 records waiting (one of 100 dropped before it), want 100", v)
	}
}

// TestAFetcherThatCannotReplaceItsClientStopsTheReader: on a cluster
// without topic IDs that speaks Fetch v13, a fetcher whose new client
// cannot be made (here: a hook franz-go refuses) has closed the old one;
// Run returns the error (the job restarts) rather than the fetcher
// retrying on a closed client.
func TestAFetcherThatCannotReplaceItsClientStopsTheReader(t *testing.T) {
	_, b, topic := clusterWithoutTopicIDs(t, 1, 10)
	cfg := testConfig(b, topic)
	cfg.Readers = 1
	var clients atomic.Int64
	cfg.Hooks = func(name string) []kgo.Hook {
		if name == "source-0" && clients.Add(1) > 1 {
			return []kgo.Hook{struct{}{}} // implements no hook: NewClient fails
		}
		return nil
	}
	s := openSource(t, cfg)
	err := runUntilError(t, s.readers[0], "its fetcher closed its client and could not make another")
	if !errors.Is(err, errNoClient) {
		t.Fatalf("Run: %v, want the fetcher's error of no client", err)
	}
}
