package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// Producing ids

// producerSpec describes the input: ids 0..N-1 (fewer if stopped early),
// each once, in order, at about Rate ids per second (0: as fast as
// possible), keyed by id. With DupEvery k
// > 0 some ids are sent twice on purpose: every id with id%k == 0 again right
// after itself, every id with id%k == k/2 again 1000 ids later; the copy
// carries "dup":true.
type producerSpec struct {
	N        int
	Rate     float64
	DupEvery int
	// CopyKey, if set, is appended to the Kafka key of each duplicate: a
	// copy then lands in another partition (and reader) than its id, and
	// only a job keyed by the id (pipeline.key_by) can drop it.
	CopyKey string
}

// producer sends ids in a goroutine. Its counters may be read at any time;
// err only after done is closed.
type producer struct {
	spec     producerSpec
	topic    string
	cl       *kgo.Client
	cancel   context.CancelFunc
	sent     atomic.Int64 // ids handed to the client (unique): 0..sent-1
	dups     atomic.Int64 // intentional duplicates handed to the client
	done     chan struct{}
	halt     chan struct{} // closed by stop
	started  time.Time
	finished time.Time
	err      error
	errOnce  sync.Once
}

// startProducer starts producing to topic; the client is closed when the test
// ends.
func startProducer(t testing.TB, b kafkatest.Brokers, topic string, spec producerSpec) *producer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addrs...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond),
		// Idempotent (the default) with all acks: a retry never writes an id twice.
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{spec: spec, topic: topic, cl: cl, cancel: cancel,
		done: make(chan struct{}), halt: make(chan struct{}), started: time.Now()}
	t.Cleanup(func() {
		cancel()
		<-p.done
		cl.Close()
	})
	go p.run(ctx)
	return p
}

func (p *producer) fail(err error) {
	p.errOnce.Do(func() { p.err = err })
}

func (p *producer) run(ctx context.Context) {
	defer close(p.done)
	defer func() { p.finished = time.Now() }()
	const dupDelay = 1000
	var delayed []int // ids to send again, in the order they fall due
	send := func(id int, dup bool) {
		// Counted before the client has it, so that an id read from the
		// output is always below sent.
		if dup {
			p.dups.Add(1)
		} else {
			p.sent.Add(1)
		}
		key := strconv.Itoa(id)
		if dup {
			key += p.spec.CopyKey
		}
		r := &kgo.Record{Key: []byte(key), Value: recordValue(id, dup)}
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil && ctx.Err() == nil {
				p.fail(fmt.Errorf("produce id %d: %w", id, err))
			}
		})
	}
	next := 0
	for next < p.spec.N {
		target := p.spec.N
		if p.spec.Rate > 0 {
			target = min(p.spec.N, int(p.spec.Rate*time.Since(p.started).Seconds())+1)
		}
		for ; next < target; next++ {
			send(next, false)
			if k := p.spec.DupEvery; k > 0 {
				if next%k == 0 {
					send(next, true)
				}
				if next%k == k/2 {
					delayed = append(delayed, next)
				}
				for len(delayed) > 0 && delayed[0]+dupDelay <= next {
					send(delayed[0], true)
					delayed = delayed[1:]
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.halt:
			next = p.spec.N // stop sending new ids; send what is owed and flush
		case <-time.After(5 * time.Millisecond):
		}
	}
	for _, id := range delayed {
		send(id, true)
	}
	if err := p.cl.Flush(ctx); err != nil && ctx.Err() == nil {
		p.fail(fmt.Errorf("flush: %w", err))
	}
}

// recordValue is the JSON value of id: {"id":N,...}, 60 to 100 bytes.
func recordValue(id int, dup bool) []byte {
	v := fmt.Sprintf(`{"id":%d,"ts":%d,"customer":"c-%d","amount":%d.%02d,"pad":"xxxxxxxxxxxx"`,
		id, time.Now().UnixMilli(), id%997, id%500, id%100)
	if dup {
		v += `,"dup":true`
	}
	return []byte(v + "}")
}

func (p *producer) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop ends production early: no new id is sent; those sent are flushed.
// Then it waits as wait does; the ids sent are [0, sent).
func (p *producer) stop(t testing.TB, timeout time.Duration) int {
	t.Helper()
	close(p.halt)
	p.wait(t, timeout)
	return int(p.sent.Load())
}

// stopAfter lets the producer go on until it has sent atLeast ids (or
// ended by itself), then stops it as stop does and returns how many it
// sent: the ids [0, sent).
func (p *producer) stopAfter(t testing.TB, atLeast int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for p.running() && p.sent.Load() < int64(atLeast) {
		if time.Now().After(deadline) {
			t.Fatalf("producer: %d of at least %d ids sent after %v", p.sent.Load(), atLeast, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p.stop(t, timeout)
}

// wait waits for every id to be sent and acknowledged.
func (p *producer) wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("producer: %d of %d ids sent after %v", p.sent.Load(), p.spec.N, timeout)
	}
	if p.err != nil {
		t.Fatalf("producer: %v", p.err)
	}
	t.Logf("producer: %d ids and %d intentional duplicates in %v",
		p.sent.Load(), p.dups.Load(), p.finished.Sub(p.started).Round(time.Millisecond))
}

// produceIDs sends the ids [from, to) and waits until every one is
// acknowledged: keyed by id and valued as startProducer does, so a copy
// lands in the partition (and worker) of its id. With copies, each is sent
// as a copy ("dup":true) of an id sent before.
func produceIDs(t testing.TB, b kafkatest.Brokers, topic string, from, to int, copies bool) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addrs...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for id := from; id < to; id++ {
		rs = append(rs, &kgo.Record{Key: []byte(strconv.Itoa(id)), Value: recordValue(id, copies)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce ids [%d, %d): %v", from, to, err)
	}
}
