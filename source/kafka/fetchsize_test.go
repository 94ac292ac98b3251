package kafka

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

func TestFetchShareFollowsTheRecordSizeBetweenFloorAndLimit(t *testing.T) {
	s := newFetchSizer(1 << 20)
	if s.current != fetchPartitionFloor {
		t.Fatalf("before any fetch: %d, want the floor %d", s.current, fetchPartitionFloor)
	}
	if share, changed := s.fetched(0, 0); changed || share != fetchPartitionFloor {
		t.Fatalf("an empty fetch: %d, %v; want no change", share, changed)
	}
	if share, changed := s.fetched(1000, 100_000); changed || share != fetchPartitionFloor {
		t.Fatalf("100 B records: %d, %v; want the floor, unchanged", share, changed)
	}
	// 1 KB records: the average moves a quarter of the way per fetch, and
	// the share reaches the limit.
	var last int32
	for range 20 {
		if share, changed := s.fetched(1000, 1_000_000); changed {
			last = share
		}
	}
	if last != 1<<20 || s.current != 1<<20 {
		t.Fatalf("1 KB records: last change to %d, current %d; want the limit %d", last, s.current, 1<<20)
	}
	// A small wobble of the average changes nothing.
	for range 5 {
		if share, changed := s.fetched(1000, 990_000); changed {
			t.Fatalf("990 B records after 1 KB ones: changed to %d", share)
		}
	}
	// Back to small records: back to the floor (reached once the average
	// nears 100 B; changes under an eighth wait for it).
	for range 30 {
		s.fetched(1000, 100_000)
	}
	if s.current != fetchPartitionFloor {
		t.Fatalf("100 B records again: %d, want the floor", s.current)
	}
	// Between floor and limit the share is ~5k records' worth.
	mid := newFetchSizer(1 << 20)
	if share, changed := mid.fetched(1000, 150_000); !changed || share != 150*fetchPartitionRecords {
		t.Fatalf("150 B records: %d, %v; want %d", share, changed, 150*fetchPartitionRecords)
	}
	// There, an average that moves by less than an eighth changes nothing.
	for range 10 {
		if share, changed := mid.fetched(1000, 160_000); changed {
			t.Fatalf("160 B records after 150 B ones: changed to %d, want no change under an eighth", share)
		}
	}
	if share, changed := mid.fetched(1000, 400_000); !changed || share <= 160*fetchPartitionRecords {
		t.Fatalf("then 400 B records: %d, %v; want a larger share", share, changed)
	}
}

func TestFetchShareNeverExceedsTheConfiguredLimit(t *testing.T) {
	s := newFetchSizer(64 << 10)
	if s.current != 64<<10 {
		t.Fatalf("limit below the floor: %d, want the limit", s.current)
	}
	for range 10 {
		s.fetched(10, 100_000) // 10 KB records
	}
	if s.current != 64<<10 {
		t.Fatalf("large records: %d, want the limit 64 KiB", s.current)
	}
}

// A reader reading 2 KB records asks for the whole limit per partition; one
// reading 20 B records stays at the floor.
func TestReaderSizesItsFetchesByTheRecordsItReads(t *testing.T) {
	b := kafkatest.Cluster(t)
	for _, c := range []struct {
		size int
		want int32
	}{{2000, 1 << 20}, {20, fetchPartitionFloor}} {
		topic := kafkatest.Topic(t, b, 1)
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		var rs []*kgo.Record
		for range 200 {
			rs = append(rs, kgo.StringRecord(`"`+strings.Repeat("x", c.size-2)+`"`))
		}
		err = cl.ProduceSync(context.Background(), rs...).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		s, err := Open(context.Background(), testConfig(b, topic), nil, testLog(t))
		if err != nil {
			t.Fatal(err)
		}
		r := s.readers[0]
		rec, stop := runReader(t, r)
		waitFor(t, "200 records", func() bool { return rec.count() == 200 })
		stop() // Run has returned: its fields may be read
		s.Close()
		if r.fetch.current != c.want {
			t.Errorf("%d B records: partition share %d, want %d", c.size, r.fetch.current, c.want)
		}
	}
}
