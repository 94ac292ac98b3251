package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestPostgresUpsertUnderSIGKILLKeepsOneRowPerKeyWithTheLastValue: in
// upsert mode (key: [id], the table's primary key), 200 keys are written
// 150 times each, in rounds, with a value v that grows with every record
// of a key; a checkpoint's transaction holds each key about three times.
// Meanwhile the connector is SIGKILLed at random moments and restarted, so
// records are written again after each kill. In the end the table holds
// one row per key, with the last value of that key.
func TestPostgresUpsertUnderSIGKILLKeepsOneRowPerKeyWithTheLastValue(t *testing.T) {
	const (
		keys   = 200
		rounds = 150
		rate   = 2_000 // records/s: 30,000 records over 15 s
		kills  = 8
	)
	b := cluster(t)
	dsn := pgDatabase(t, `CREATE TABLE u (id bigint PRIMARY KEY, v bigint NOT NULL, customer text)`)
	j := newPGJob(t, b, jobSpec{Parallelism: 2, Partitions: 4}, dsn, "u", map[string]any{"mode": "upsert", "key": []string{"id"}})
	rng := newRand(t)
	// Record i is key i%keys with v = i: the last record of key k has v =
	// (rounds-1)*keys + k. The message key is the row's key, so a key's
	// records stay in order in one partition.
	prod := startValueProducer(t, b, j.topic, keys*rounds, rate, func(i int) (key, value []byte) {
		k := i % keys
		return []byte(strconv.Itoa(k)), fmt.Appendf(nil, `{"id":%d,"v":%d,"customer":"c-%d"}`, k, i, k)
	})

	for range kills {
		p := j.start()
		delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1700*time.Millisecond)))
		if p.wait(delay) {
			j.fatalf(p, "%s ended by itself before the kill planned at %v: %s", p, delay.Round(time.Millisecond), p.status())
		}
		j.kill(p)
	}
	prod.wait(t, 2*time.Minute)
	last := (rounds - 1) * keys
	p := j.start()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c := pgInt(t, dsn, "SELECT count(*) FROM u WHERE v = $1 + id", last)
		if c == keys {
			break
		}
		j.requireRunning(p, "waiting for the last value of every key")
		if time.Now().After(deadline) {
			j.fatalf(p, "%s: %d of %d keys have their last value after 2 minutes", p, c, keys)
		}
		time.Sleep(250 * time.Millisecond)
	}
	j.terminate(p, time.Minute)

	rows := pgInt(t, dsn, "SELECT count(*) FROM u")
	wrong := pgStrings(t, dsn, "SELECT format('id %s v %s', id, v) FROM u WHERE v <> $1 + id OR id < 0 OR id >= $2 ORDER BY id LIMIT 10", last, keys)
	t.Logf("upsert: %d records over %d keys, %d kills: %d rows, %d with another than the last value", keys*rounds, keys, kills, rows, len(wrong))
	if rows != keys || len(wrong) > 0 {
		t.Errorf("table u has %d rows, want %d (one per key); rows without their key's last value: %v", rows, keys, wrong)
	}
	j.requireNothingLeftOpen()
}

// valueProducer sends records made by a function, at a rate, in a
// goroutine.
type valueProducer struct {
	sent atomic.Int64
	done chan struct{}
	err  error
}

// startValueProducer sends records 0..n-1, made by rec, at about rate
// records per second, each acknowledged before the next batch.
func startValueProducer(t *testing.T, b kafkatest.Brokers, topic string, n int, rate float64, rec func(i int) (key, value []byte)) *valueProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	vp := &valueProducer{done: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-vp.done
		cl.Close()
	})
	go func() {
		defer close(vp.done)
		start := time.Now()
		for next := 0; next < n; {
			target := min(n, int(rate*time.Since(start).Seconds())+1)
			var rs []*kgo.Record
			for ; next < target; next++ {
				k, v := rec(next)
				rs = append(rs, &kgo.Record{Key: k, Value: v})
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				vp.err = err
				return
			}
			vp.sent.Store(int64(next))
			select {
			case <-ctx.Done():
				vp.err = ctx.Err()
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return vp
}

// wait waits until every record is sent and acknowledged.
func (vp *valueProducer) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-vp.done:
	case <-time.After(timeout):
		t.Fatalf("producer: %d records sent after %v", vp.sent.Load(), timeout)
	}
	if vp.err != nil {
		t.Fatalf("producer: %v", vp.err)
	}
}
