// Command raw is the ceiling of the benchmark's source side: franz-go
// consumers that read a topic from the beginning and discard every record,
// until they have read --records records in all. No consumer group, no
// processing, no output.
//
//	raw --brokers 127.0.0.1:39092 --topic bench-100b-5000000 --records 5000000 [--clients 2]
//	raw ... --out-topic bench-k2k-out-1   (consume and produce)
//
// With --out-topic it is the ceiling of a Kafka-to-Kafka job instead: each
// consumer hands every record (key, value, timestamp) to a producer of its
// own, franz-go's defaults (acks=all, idempotent, the key's murmur2 picks
// the partition, as Kafka's Java clients, 10 ms linger) but for
// compression: none, as the connector's Kafka sink and Flink's KafkaSink
// produce by default (franz-go's default, snappy, costs the producer and
// the broker CPU the others do not spend). No transactions; the run ends
// once every produced record was acknowledged.
//
// --txn-interval D (a diagnostic, bench/run's raw-k2k-txn) adds what any
// exactly-once job pays Kafka: each producer writes in transactions
// (transactional id <--txn-id>-<client>), committed every D from the
// consuming goroutine (flush, commit, begin: consuming waits meanwhile);
// the run then ends once the last transactions are committed. --linger
// sets the producers' linger (franz-go's default 10 ms; the connector's
// sink uses 5 ms).
//
// Like the connector's source, it reads committed records only and splits
// the partitions over --clients clients (partition p goes to client p mod
// clients), one goroutine each. On exit it prints one JSON line on stdout:
// {"records":N,"bytes":B,"first_s":F,"seconds":S}: F from the start to the
// first record, S from the start to the last one read (with --out-topic:
// acknowledged by the broker).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", os.Getenv("KAFKA_BROKERS"), "Kafka `host:port` (default $KAFKA_BROKERS)")
	topic := flag.String("topic", "", "`topic` to read")
	records := flag.Int64("records", 0, "stop after this many `records`")
	clients := flag.Int("clients", 1, "parallel consumers, each owning a share of the partitions")
	var k produceOpts
	flag.StringVar(&k.out, "out-topic", "", "produce every record to this `topic` (it must exist)")
	flag.DurationVar(&k.txnInterval, "txn-interval", 0, "with --out-topic: produce in transactions committed this often (0: none)")
	flag.StringVar(&k.txnID, "txn-id", "bench-k2k-raw", "with --txn-interval: the transactional ids' `prefix`")
	flag.DurationVar(&k.linger, "linger", 10*time.Millisecond, "with --out-topic: the producers' linger")
	flag.Parse()
	if *brokers == "" || *topic == "" || *records <= 0 || *clients <= 0 {
		fmt.Fprintln(os.Stderr, "raw: --brokers, --topic and a positive --records are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, *brokers, *topic, k, *records, *clients)
	if err != nil {
		fmt.Fprintf(os.Stderr, "raw: %v\n", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// produceOpts are the consume-and-produce loop's.
type produceOpts struct {
	out         string
	txnInterval time.Duration
	txnID       string
	linger      time.Duration
}

type result struct {
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`
	First   float64 `json:"first_s"`
	Seconds float64 `json:"seconds"`
}

func run(ctx context.Context, brokers, topic string, k produceOpts, want int64, clients int) (result, error) {
	began := time.Now()
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return result{}, err
	}
	starts, err := kadm.NewClient(admin).ListStartOffsets(ctx, topic)
	admin.Close()
	if err != nil {
		return result{}, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	owned := make([]map[int32]kgo.Offset, clients)
	for i := range owned {
		owned[i] = map[int32]kgo.Offset{}
	}
	starts.Each(func(o kadm.ListedOffset) {
		owned[int(o.Partition)%clients][o.Partition] = kgo.NewOffset().At(o.Offset)
	})

	var (
		nrec, nbytes atomic.Int64 // read, or with out: acknowledged
		done         = make(chan struct{})
		once         sync.Once
		end          time.Time
		wg           sync.WaitGroup
		firstErr     atomic.Pointer[error]
		firstAt      atomic.Int64 // ns since began of the first record
	)
	finish := func() { once.Do(func() { end = time.Now(); close(done) }) }
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, parts := range owned {
		if len(parts) == 0 {
			continue
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(brokers),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.FetchMaxWait(200*time.Millisecond),
		)
		if err != nil {
			return result{}, err
		}
		defer cl.Close()
		var prod *kgo.Client
		if k.out != "" {
			opts := []kgo.Opt{kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(k.out),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(k.linger)}
			if k.txnInterval > 0 {
				opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-%d", k.txnID, i)), kgo.TransactionTimeout(time.Minute))
			}
			if prod, err = kgo.NewClient(opts...); err != nil {
				return result{}, err
			}
			defer prod.Close()
			if k.txnInterval > 0 {
				if err := prod.BeginTransaction(); err != nil {
					return result{}, err
				}
			}
		}
		// commit ends the producer's transaction, and begins the next
		// unless last. The last commit runs after the run was stopped
		// (every record acknowledged, or a signal) with a context of its
		// own.
		commit := func(last bool) {
			c := ctx
			if last {
				var cancel context.CancelFunc
				c, cancel = context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
			}
			if err := prod.Flush(c); err == nil {
				err = prod.EndTransaction(c, kgo.TryCommit)
			}
			if err == nil && !last {
				err = prod.BeginTransaction()
			}
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				finish()
			}
		}
		acked := func(r *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				finish() // the run failed
				return
			}
			nbytes.Add(int64(len(r.Value)))
			if nrec.Add(1) == want {
				finish()
			}
		}
		wg.Go(func() {
			if k.txnInterval > 0 {
				defer commit(true) // after the last ack (cctx is cancelled then)
			}
			txnBegan := time.Now()
			for cctx.Err() == nil {
				pctx, pcancel := cctx, context.CancelFunc(func() {})
				if k.txnInterval > 0 {
					// Wake up to commit even when nothing comes.
					pctx, pcancel = context.WithDeadline(cctx, txnBegan.Add(k.txnInterval))
				}
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachError(func(t string, p int32, err error) {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
						firstErr.CompareAndSwap(nil, &err)
					}
				})
				var r, b int64
				if !fs.Empty() && firstAt.Load() == 0 {
					firstAt.CompareAndSwap(0, int64(time.Since(began)))
				}
				if prod != nil {
					// Produce blocks while the producer buffers
					// its maximum (10,000 records by default).
					fs.EachRecord(func(rec *kgo.Record) {
						prod.Produce(ctx, &kgo.Record{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp}, acked)
					})
					if k.txnInterval > 0 && time.Since(txnBegan) >= k.txnInterval {
						commit(false)
						txnBegan = time.Now()
					}
					continue // the last ack ends the run
				}
				fs.EachRecord(func(rec *kgo.Record) {
					r++
					b += int64(len(rec.Value))
				})
				nbytes.Add(b)
				if nrec.Add(r) >= want {
					finish()
					return
				}
			}
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if k.txnInterval > 0 {
		end = time.Now() // the last transactions committed
	}
	if e := firstErr.Load(); e != nil && ctx.Err() == nil && nrec.Load() < want {
		return result{}, *e
	}
	if nrec.Load() < want {
		return result{}, fmt.Errorf("stopped after %d of %d records", nrec.Load(), want)
	}
	return result{Records: nrec.Load(), Bytes: nbytes.Load(),
		First: time.Duration(firstAt.Load()).Seconds(), Seconds: end.Sub(began).Seconds()}, nil
}
