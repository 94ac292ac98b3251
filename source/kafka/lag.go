package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/source"
)

var _ source.Lagger = (*Source)(nil)

// Lag returns every reader's consumer lag per partition it owns: the
// partition's high watermark minus the reader's next offset. The high
// watermark is the newer of what the reader's last fetch of the partition
// said and what the source last listed (at Open, then every
// DiscoverInterval): a caught-up partition returns no fetches, so its lag
// would otherwise never be known. A partition whose high watermark is not
// known yet is left out. A partition that ends with transaction markers
// reaches a lag of 0 once the fetch that holds them was handed on: the
// reader's position moves past them (Reader.emit). Safe from any
// goroutine until Close.
func (s *Source) Lag() []source.Lag {
	var out []source.Lag
	for _, r := range s.readers {
		out = r.lag.appendTo(out)
	}
	return out
}

// refreshLag lists the high watermark of every partition of the topics for
// the readers' lag. Best effort: a failure leaves the last known values.
func (s *Source) refreshLag(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := s.listEdges(ctx, logEnd)
	if err != nil {
		s.log.Debug().Err(err).Msg("listing end offsets for the consumer lag failed")
		return
	}
	for i, r := range s.readers {
		r.lag.setEnds(s.owned(i, ends))
	}
}

// lagTable is one reader's view of its partitions: its next offset and the
// high watermark. The reader's Run goroutine writes the next offsets and
// the watermarks it fetches; the source writes listed watermarks; Lag reads
// it from any goroutine.
type lagTable struct {
	mu   sync.Mutex
	next map[partitionID]int64
	end  map[partitionID]int64
}

type partitionID struct {
	topic     string
	partition int32
}

// setNext records the reader's next offset of every partition of o.
func (l *lagTable) setNext(o Offsets) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next == nil {
		l.next = map[partitionID]int64{}
	}
	for t, ps := range o {
		for p, n := range ps {
			l.next[partitionID{t, p}] = n
		}
	}
}

// setEnds records listed high watermarks; a watermark never goes back.
func (l *lagTable) setEnds(o Offsets) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for t, ps := range o {
		for p, n := range ps {
			l.setEnd(partitionID{t, p}, n)
		}
	}
}

func (l *lagTable) setEnd(id partitionID, n int64) {
	if l.end == nil {
		l.end = map[partitionID]int64{}
	}
	l.end[id] = max(l.end[id], n)
}

// fetched records, for every partition of fetch fs, its high watermark and
// the reader's next offset once the fetch was handed on.
func (l *lagTable) fetched(fs kgo.Fetches, positions Offsets) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		next, ok := positions.Lookup(p.Topic, p.Partition)
		if p.Err != nil || !ok {
			return
		}
		id := partitionID{p.Topic, p.Partition}
		l.next[id] = next
		l.setEnd(id, p.HighWatermark)
	})
}

func (l *lagTable) appendTo(out []source.Lag) []source.Lag {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, next := range l.next {
		if end, ok := l.end[id]; ok {
			out = append(out, source.Lag{Topic: id.topic, Partition: id.partition, Records: max(end-next, 0), Next: next, End: end})
		}
	}
	return out
}
