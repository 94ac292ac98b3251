// Command lazyfetch is a diagnostic of the source's memory (issue 17): it
// reads a topic as bench/cmd/raw does (committed records, the partitions
// split over --clients, each client with one fetch buffered while the last
// is handed on, 1 MiB a partition) and counts the records, in one of two
// ways:
//
//   - eager: franz-go's consumer, which decodes every fetched batch into
//     kgo.Record structs as soon as the response arrives (pooled and
//     recycled, as the connector's source does);
//   - lazy: Fetch requests of its own through the same client, whose
//     responses are kept as they came (the next offsets read from the
//     batches' headers) and decoded one partition at a time, with
//     kgo.ProcessFetchPartition, only when they are handed on.
//
// A diagnostic, not a contender: it knows one broker leading every
// partition, no fetch sessions, and stops at the first error. Run it under
// /usr/bin/time -v to compare the peak RSS and the CPU.
//
//	lazyfetch --brokers 127.0.0.1:39092 --topic bench-v2-100b-10000000 --records 10000000 --clients 2 --mode lazy
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/internal/slicepool"
)

const partitionBytes = 1 << 20

func main() {
	brokers := flag.String("brokers", os.Getenv("KAFKA_BROKERS"), "Kafka `host:port`")
	topic := flag.String("topic", "", "`topic` to read")
	records := flag.Int64("records", 0, "stop after this many `records`")
	clients := flag.Int("clients", 2, "clients, each over a share of the partitions")
	mode := flag.String("mode", "lazy", "eager (franz-go's consumer) or lazy (own fetches)")
	flag.Parse()
	if *brokers == "" || *topic == "" || *records <= 0 || *clients <= 0 || (*mode != "eager" && *mode != "lazy") {
		fmt.Fprintln(os.Stderr, "lazyfetch: --brokers, --topic, a positive --records and --mode eager|lazy are required")
		os.Exit(2)
	}
	began := time.Now()
	n, err := run(context.Background(), *brokers, *topic, *mode, *records, *clients)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lazyfetch: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("{\"mode\":%q,\"records\":%d,\"seconds\":%.2f}\n", *mode, n, time.Since(began).Seconds())
}

type pool struct{ p slicepool.Pool[kgo.Record] }

func (p *pool) GetRecords(n int) []kgo.Record { return p.p.Get(n) }
func (p *pool) PutRecords(rs []kgo.Record)    { p.p.Put(rs) }

var recPool = &pool{}

func run(ctx context.Context, brokers, topic, mode string, want int64, clients int) (int64, error) {
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	td := details[topic]
	if td.Err != nil {
		return 0, td.Err
	}
	owned := make([]map[int32]int64, clients)
	for i := range owned {
		owned[i] = map[int32]int64{}
	}
	leader := int32(-1)
	for p, pd := range td.Partitions {
		if leader != -1 && pd.Leader != leader {
			return 0, fmt.Errorf("partitions led by brokers %d and %d: one broker only", leader, pd.Leader)
		}
		leader = pd.Leader
		o, _ := starts.Lookup(topic, p)
		owned[int(p)%clients][p] = o.Offset
	}

	var (
		n      atomic.Int64
		wg     sync.WaitGroup
		first  atomic.Pointer[error]
		cctx   context.Context
		cancel context.CancelFunc
	)
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	count := func(r int64) {
		if n.Add(r) >= want {
			cancel()
		}
	}
	fail := func(err error) {
		if cctx.Err() == nil {
			first.CompareAndSwap(nil, &err)
		}
		cancel()
	}
	for _, parts := range owned {
		if len(parts) == 0 {
			continue
		}
		if mode == "eager" {
			offs := map[int32]kgo.Offset{}
			for p, o := range parts {
				offs[p] = kgo.NewOffset().At(o)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond),
				kgo.FetchMaxPartitionBytes(partitionBytes), kgo.WithPools(recPool))
			if err != nil {
				return 0, err
			}
			defer cl.Close()
			wg.Go(func() {
				for cctx.Err() == nil {
					fs := cl.PollFetches(cctx)
					fs.EachError(func(_ string, p int32, err error) { fail(fmt.Errorf("partition %d: %w", p, err)) })
					var r int64
					fs.EachRecord(func(rec *kgo.Record) { r++; rec.Recycle() })
					count(r)
				}
			})
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		f := &lazy{br: cl.Broker(int(leader)), topic: topic, id: td.ID, next: parts, out: make(chan fetched)}
		wg.Go(func() {
			if err := f.fetch(cctx); err != nil {
				fail(err)
			}
		})
		wg.Go(func() {
			for fr := range f.out {
				r, err := decode(topic, fr)
				if err != nil {
					fail(err)
					return
				}
				count(r)
			}
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return n.Load(), *e
	}
	if n.Load() < want {
		return n.Load(), fmt.Errorf("stopped after %d of %d records", n.Load(), want)
	}
	return n.Load(), nil
}

// lazy is one client's own fetch loop.
type lazy struct {
	br    *kgo.Broker
	topic string
	id    [16]byte
	next  map[int32]int64 // the offset each partition is read from next
	out   chan fetched
}

// fetched is a fetch response as it came and the offset each of its
// partitions was asked from.
type fetched struct {
	resp *kmsg.FetchResponse
	from map[int32]int64
}

// fetch asks for the next records of every partition, advances the offsets
// by the batches' headers, and hands the response on undecoded; it asks
// for the next one as soon as this one was taken.
func (f *lazy) fetch(ctx context.Context) error {
	defer close(f.out)
	for ctx.Err() == nil {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 200
		req.MinBytes = 1
		req.MaxBytes = 50 << 20
		req.IsolationLevel = 1
		req.SessionEpoch = -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = f.topic, f.id
		from := make(map[int32]int64, len(f.next))
		for p, o := range f.next {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, o, partitionBytes
			t.Partitions = append(t.Partitions, rp)
			from[p] = o
		}
		req.Topics = append(req.Topics, t)
		r, err := f.br.Request(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		resp := r.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, rt := range resp.Topics {
			for i := range rt.Partitions {
				rp := &rt.Partitions[i]
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("partition %d: %w", rp.Partition, err)
				}
				if end, ok := batchesEnd(rp.RecordBatches); ok {
					f.next[rp.Partition] = end
				}
			}
		}
		select {
		case f.out <- fetched{resp, from}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// batchesEnd returns the offset after the last whole record batch of b
// (magic 2), read from the batches' headers: first offset (8 bytes),
// length (4), leader epoch (4), magic (1), CRC (4), attributes (2), last
// offset delta (4).
func batchesEnd(b []byte) (int64, bool) {
	var end int64
	ok := false
	for len(b) >= 27 {
		length := int(int32(binary.BigEndian.Uint32(b[8:]))) + 12
		if length < 27 || len(b) < length || b[16] != 2 {
			break
		}
		end = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		ok = true
		b = b[length:]
	}
	return end, ok
}

// decode decodes a fetch one partition at a time and counts its records.
func decode(topic string, fr fetched) (int64, error) {
	var r int64
	for _, rt := range fr.resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: fr.from[rp.Partition], IsolationLevel: kgo.ReadCommitted(),
				Topic: topic, Partition: rp.Partition, Pools: []kgo.Pool{recPool},
			}, rp, nil, nil)
			if fp.Err != nil {
				return r, fp.Err
			}
			for _, rec := range fp.Records {
				r++
				rec.Recycle()
			}
		}
	}
	return r, nil
}
