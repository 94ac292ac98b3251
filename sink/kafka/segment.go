package kafka

import (
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

	mu      sync.Mutex
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

// acked records a produce ack.
func (t *txn) acked(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.err == nil {
			t.err = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err)
		}
		return
	}
	t.pid, t.epoch = r.ProducerID, r.ProducerEpoch
	t.records++
	t.bytes += int64(len(r.Key) + len(r.Value))
	tp := topicPartition{r.Topic, r.Partition}
	pr := t.ranges[tp]
	if pr == nil {
		t.ranges[tp] = &prange{Topic: r.Topic, Partition: r.Partition, First: r.Offset, Last: r.Offset}
		return
	}
	pr.First, pr.Last = min(pr.First, r.Offset), max(pr.Last, r.Offset)
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
