package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
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

// TestFetchSettingsAboveTheClientsDefaultReadLimitAreRead: with
// fetch_max_bytes and fetch_max_partition_bytes at 200 MiB, a fetch answer
// of ~119 MiB is read. The clients kept franz-go's read limit (100 MiB),
// refused every such answer, and the reader fetched it again, forever.
func TestFetchSettingsAboveTheClientsDefaultReadLimitAreRead(t *testing.T) {
	_, b := fakeCluster(t, 1)
	topic := kafkatest.Topic(t, b, 1)
	produceLarge(t, b, topic, 135, 900<<10, 2<<20) // ~119 MiB
	cfg := testConfig(b, topic)
	cfg.FetchMaxBytes, cfg.FetchMaxPartitionBytes = 200<<20, 200<<20
	s := openSource(t, cfg)
	rec, stop := runReader(t, s.readers[0])
	defer stop()
	waitFor(t, "all 135 records", func() bool { return rec.count() == 135 })
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
	_, done, cancel := startReader(s.readers[0])
	defer cancel()
	select {
	case err := <-done:
		if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "fetch_max_partition_bytes") {
			t.Fatalf("Run = %v, want errTooLarge naming the setting to raise", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the reader still runs after 20 s: it retries a fetch it can never read")
	}
}
