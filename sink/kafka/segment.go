package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
)

// A segment is what one writer produced in one transaction: the records
// between two of its pre-commits. Its committable names the transaction and
// where its records are in the log, so that a restart can tell from the
// writer's progress marker whether it committed, and otherwise produce its
// records again from the log (see recover.go).
type segment struct {
	TxnID      string   `json:"txn"`
	ProducerID int64    `json:"pid"`
	Epoch      int16    `json:"epoch"`
	Ranges     []prange `json:"ranges"`
	Records    int64    `json:"records"`
}

// prange is where a segment's records lie in one partition: between First
// and Last inclusive, mixed with other producers' records.
type prange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	First     int64  `json:"first"`
	Last      int64  `json:"last"`
}

func encodeSegment(id checkpoint.ID, writer int, s segment) (sink.Committable, error) {
	data, err := json.Marshal(s)
	return sink.Committable{Checkpoint: id, Writer: writer, Data: data}, err
}

func decodeSegment(c sink.Committable) (segment, error) {
	var s segment
	if err := json.Unmarshal(c.Data, &s); err != nil || s.TxnID == "" {
		return s, fmt.Errorf("%w: kafka sink: checkpoint %d writer %d: %q", sink.ErrBadCommittable, c.Checkpoint, c.Writer, c.Data)
	}
	return s, nil
}

// txn is one open transaction of a writer: its slot's client, and what
// its records' produce acks said. Records are produced from the writer's
// goroutine; acks arrive on the client's goroutines.
type txn struct {
	id     string
	slot   int
	cl     *kgo.Client
	began  time.Time
	writer int

	// The progress group's addition to the transaction, begun with it.
	groupOnce sync.Once
	groupDone chan struct{}
	groupErr  error

	mu      sync.Mutex
	last    *prange // the range of the last ack: acks come in runs per partition
	ranges  map[topicPartition]*prange
	records int64
	bytes   int64
	pid     int64
	epoch   int16
	err     error // the first produce error
}

type topicPartition struct {
	topic     string
	partition int32
}

// startAddGroup adds the progress group to the transaction in the
// background.
func (t *txn) startAddGroup(s *Sink) {
	t.groupOnce.Do(func() {
		t.groupDone = make(chan struct{})
		go func() {
			defer close(t.groupDone)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			t.groupErr = s.addGroup(ctx, t)
		}()
	})
}

// groupAdded waits for startAddGroup (starting it if it was not).
func (t *txn) groupAdded(ctx context.Context, s *Sink) error {
	t.startAddGroup(s)
	select {
	case <-t.groupDone:
		return t.groupErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// acked records a produce ack, and recycles the record: the client no
// longer uses it once its promise ran.
func (t *txn) acked(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer freeRecord(r)
	if err != nil {
		if t.err == nil {
			t.err = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err)
		}
		return
	}
	t.pid, t.epoch = r.ProducerID, r.ProducerEpoch
	t.records++
	t.bytes += int64(len(r.Key) + len(r.Value))
	pr := t.last
	if pr == nil || pr.Partition != r.Partition || pr.Topic != r.Topic {
		tp := topicPartition{r.Topic, r.Partition}
		if pr = t.ranges[tp]; pr == nil {
			pr = &prange{Topic: r.Topic, Partition: r.Partition, First: r.Offset, Last: r.Offset}
			t.ranges[tp] = pr
		}
		t.last = pr
	}
	pr.First, pr.Last = min(pr.First, r.Offset), max(pr.Last, r.Offset)
}

// Produced records are recycled: one allocation per record was the sink's
// largest cost.
var recordPool = sync.Pool{New: func() any { return new(kgo.Record) }}

func newRecord() *kgo.Record { return recordPool.Get().(*kgo.Record) }

func freeRecord(r *kgo.Record) {
	*r = kgo.Record{Headers: r.Headers[:0]}
	recordPool.Put(r)
}

// segment describes the transaction once every record was acked.
func (t *txn) segment() (segment, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return segment{}, t.err
	}
	s := segment{TxnID: t.id, ProducerID: t.pid, Epoch: t.epoch, Records: t.records}
	for _, r := range t.ranges {
		s.Ranges = append(s.Ranges, *r)
	}
	slices.SortFunc(s.Ranges, func(a, b prange) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return s, nil
}

// topics are the topics the segment's records are in, each once.
func (s segment) topics() []string {
	var out []string
	for _, r := range s.Ranges {
		if !slices.Contains(out, r.Topic) {
			out = append(out, r.Topic)
		}
	}
	return out
}
