package kafka

// A reader sizes its fetches by the records it reads. A fetch costs memory
// by its records (each is decoded by franz-go and copied into a batch, and
// each of a reader's clients holds two fetches: fetchers.go) and gains speed
// by its bytes (a client has one fetch in flight, so each round trip to the
// broker carries one fetch's worth). A partition's share of a fetch is therefore sized to hold about
// fetchPartitionRecords records of the average size read so far, at least
// fetchPartitionFloor and at most fetch_max_partition_bytes:
// 100 B records get 512 KiB per partition, records of 205 B and more the
// whole limit (1 MiB by default, Kafka's own default). bench/RESULTS.md,
// "Design measurements", has the figures behind both numbers.
const (
	fetchPartitionRecords = 5 << 10
	fetchPartitionFloor   = 512 << 10
)

// fetchSizer tracks the average record size of a reader's fetches and the
// partition share its client asks for. The zero value is not usable: see
// newFetchSizer. Owned by the reader's Run.
type fetchSizer struct {
	limit   int32   // fetch_max_partition_bytes
	avg     float64 // bytes (key and value) per record, a moving average
	current int32   // the share the client asks for
}

func newFetchSizer(limit int32) fetchSizer {
	s := fetchSizer{limit: limit}
	s.current = s.want()
	return s
}

func (s *fetchSizer) want() int32 {
	w := max(int64(s.avg*fetchPartitionRecords), fetchPartitionFloor)
	return int32(min(w, int64(s.limit)))
}

// fetched records a fetch of n records holding size bytes of keys and
// values. It returns the new partition share and true when the client
// should ask for another: one that differs from the current by an eighth or
// more, or reaches the floor or the limit.
func (s *fetchSizer) fetched(n, size int) (int32, bool) {
	if n == 0 {
		return s.current, false
	}
	cur := float64(size) / float64(n)
	if s.avg == 0 {
		s.avg = cur
	} else {
		s.avg += (cur - s.avg) / 4
	}
	w := s.want()
	d := int64(w) - int64(s.current)
	if d == 0 || (max(d, -d) < int64(s.current)/8 && w != s.limit && w != fetchPartitionFloor) {
		return s.current, false
	}
	s.current = w
	return w, true
}
