package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/source"
)

// produceLarge writes n records of size bytes to partition 0 of topic, in
// batches of up to batch bytes.
func produceLarge(t *testing.T, b kafkatest.Brokers, topic string, n, size, batch int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(int32(batch)),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := strings.Repeat("v", size)
	for range n {
		if err := cl.ProduceSync(context.Background(), kgo.StringRecord(value)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFetchSettingsAboveTheClientsDefaultReadLimitAreRead: with the fetch
// settings above the least read limit, a fetch answer larger than that
// limit is read. The clients kept franz-go's read limit (100 MiB), refused
// every such answer, and the reader fetched it again, forever. The least
// limit is lowered to 1 MiB for the test, and the settings are 4 MiB: a
// 119 MiB answer at the real scale took kfake longer than the client's read
// timeout under -race on a loaded machine.
func TestFetchSettingsAboveTheClientsDefaultReadLimitAreRead(t *testing.T) {
	defer func(was int64) { minReadLimit = was }(minReadLimit)
	minReadLimit = 1 << 20
	_, b := fakeCluster(t, 1)
	topic := kafkatest.Topic(t, b, 1)
	produceLarge(t, b, topic, 12, 300<<10, 1<<20) // ~3.5 MiB in batches of up to 1 MiB
	cfg := testConfig(b, topic)
	cfg.FetchMaxBytes, cfg.FetchMaxPartitionBytes = 4<<20, 4<<20
	s := openSource(t, cfg)
	rec, stop := runReader(t, s.readers[0])
	defer stop()
	waitFor(t, "all 12 records", func() bool { return rec.count() == 12 })
}

// TestABatchLargerThanTheReadLimitStopsTheReader: a record batch larger
// than the clients read (the broker sends a partition's first batch whole,
// whatever the fetch settings) is an error that says which setting to
// raise, not a retry that can never succeed while the log blames the
// partition's leader. The read limit is lowered to 1 MiB for the test.
func TestABatchLargerThanTheReadLimitStopsTheReader(t *testing.T) {
	defer func(was int64) { minReadLimit = was }(minReadLimit)
	minReadLimit = 1 << 20
	_, b := fakeCluster(t, 1, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4194304"}))
	topic := kafkatest.Topic(t, b, 1)
	produceLarge(t, b, topic, 1, 3<<19, 4<<20) // one batch of 1.5 MiB
	cfg := testConfig(b, topic)
	cfg.FetchMaxBytes, cfg.FetchMaxPartitionBytes = 256<<10, 256<<10 // a limit of 1 MiB
	s := openSource(t, cfg)
	err := runUntilError(t, s.readers[0], "it retries a fetch it can never read")
	if !errors.Is(err, errTooLarge) || !errors.Is(err, source.ErrPermanent) || !strings.Contains(err.Error(), "fetch_max_partition_bytes") {
		t.Fatalf("Run = %v, want a permanent errTooLarge naming the setting to raise", err)
	}
}

// TestTheReadLimitFollowsTheFetchSettingsWithinFranzGosBounds: twice the
// larger fetch setting, from franz-go's 100 MiB to its largest, 1 GiB; a
// client is made at the largest settings the config allows.
func TestTheReadLimitFollowsTheFetchSettingsWithinFranzGosBounds(t *testing.T) {
	for _, tc := range []struct {
		fetch, part int32
		want        int32
	}{
		{50 << 20, 1 << 20, 100 << 20}, // the defaults
		{200 << 20, 1 << 20, 400 << 20},
		{1 << 20, 300 << 20, 600 << 20},
		{int32(maxFetch), int32(maxFetch), 1 << 30},
	} {
		c := Options{Brokers: []string{"127.0.0.1:1"}, FetchMaxBytes: tc.fetch, FetchMaxPartitionBytes: tc.part}
		if got := c.readLimit(); got != tc.want {
			t.Errorf("fetch_max_bytes %d, fetch_max_partition_bytes %d: read limit %d, want %d", tc.fetch, tc.part, got, tc.want)
		}
		cl, err := kgo.NewClient(c.clientOpts("test")...)
		if err != nil {
			t.Fatalf("fetch_max_bytes %d, fetch_max_partition_bytes %d: %v", tc.fetch, tc.part, err)
		}
		cl.Close()
	}
}

// TestOnlyFranzGosReadLimitRefusalIsTooLarge: franz-go refuses a response
// size three ways; the two that guess at the wrong port or protocol stay
// what they are (the tests above force the third).
func TestOnlyFranzGosReadLimitRefusalIsTooLarge(t *testing.T) {
	for _, msg := range []string{
		"invalid large response size 1213486160 > limit 104857600; the four size bytes are 'HTTP' in ascii, the beginning of an HTTP response; is your broker port correct?",
		"invalid large response size 352518912 > limit 104857600; the first three bytes received appear to be a tls alert record for TLS v1.2; is this a plaintext connection speaking to a tls endpoint?",
	} {
		if err := tooLarge(errors.New(msg)); errors.Is(err, errTooLarge) {
			t.Errorf("%q taken for a batch too large", msg)
		}
	}
}
