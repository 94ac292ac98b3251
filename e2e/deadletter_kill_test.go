package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestDeadLettersExactlyOnceUnderRandomSIGKILL: a job with
// on_decode_error: dead_letter (checkpoint.mode exactly_once, the default)
// reads ids with bad records (not JSON) among them, is SIGKILLed at 10 or
// more random moments (0.3-3 s after each start) while both are produced,
// and restarted each time; then it drains and stops on SIGTERM. Every id
// is in the output once, and a read_committed consumer of the dead-letter
// topic, independent of the connector, reads every bad record exactly
// once: a kill between a checkpoint's dead-letter pre-commit and its
// commit, or during a restart's recovery, neither loses nor repeats one.
func TestDeadLettersExactlyOnceUnderRandomSIGKILL(t *testing.T) {
	const (
		n        = 30_000
		rate     = 1_000 // ids/s: production spans about 30 s of kills
		nBad     = 1_500
		badEvery = 20 * time.Millisecond // bad records span as long
		minKills = 10
		maxKills = 25
	)
	b := cluster(t)
	dlq := kafkatest.Topic(t, b, 2)
	j := newJob(t, b, jobSpec{
		Partitions:  6,
		Parallelism: 2,
		Transforms:  []map[string]any{{"type": "filter", "condition": map[string]any{"field": "id", "op": "exists"}}},
		Config: map[string]map[string]any{
			"pipeline":   {"on_decode_error": map[string]any{"policy": "dead_letter", "topic": dlq}},
			"checkpoint": {"timeout": "10s"},
		},
	})
	prod := startProducer(t, b, j.topic, producerSpec{N: n, Rate: rate})
	bad := startBadProducer(t, b, j.topic, nBad, badEvery)
	t0 := time.Now()
	kills := j.killWhileProducing(prod, minKills, maxKills)
	t.Logf("kill phase: %d kills in %v; %d of %d ids produced", kills, time.Since(t0).Round(time.Millisecond), prod.sent.Load(), n)

	prod.wait(t, 2*time.Minute)
	bad.wait(t, 2*time.Minute)
	p := j.start()
	j.waitReady(p, 2*time.Minute)
	j.waitForAll(p, n, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute) // the bad records' too
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, kills, fmt.Sprintf("produced_again=%d", len(j.logsOf(msgProducedAgain))))

	requireDeadLettersOnce(t, b, dlq, nBad, fmt.Sprintf("kills=%d produced_again=%d", kills, len(deadLettersProducedAgain(j))))
}

// TestDeadLettersExactlyOnceAtCrashPoints: the job of
// TestDeadLettersExactlyOnceUnderRandomSIGKILL dies by SIGKILL at the
// crash points of its dead letters' two-phase commit while ids and bad
// records keep coming, each once after a clean stop and once straight
// after the previous crash. With the file sink only the dead-letter sink
// meets after-flush (a writer's dead letters acknowledged, its
// transaction without its progress marker) and before-endtxn (the
// checkpoint durable and its files committed, a dead-letter transaction
// about to be committed, or one a restart produces again);
// after-persist leaves a completed checkpoint's dead-letter transactions
// open, which the next run must abort and produce again from the log (it
// did at least once). In the end every id is in the output once and every
// bad record in the dead-letter topic once (read_committed).
func TestDeadLettersExactlyOnceAtCrashPoints(t *testing.T) {
	const perPoint = 30 * time.Second
	points := []string{"after-flush:1", "after-flush:4", "after-precommit:3", "after-persist:1", "after-persist:3", "before-endtxn:1", "before-endtxn:3", "during-restore:1"}
	b := cluster(t)
	dlq := kafkatest.Topic(t, b, 2)
	j := newJob(t, b, jobSpec{
		Partitions:  4,
		Parallelism: 2,
		Interval:    200 * time.Millisecond,
		Transforms:  []map[string]any{{"type": "filter", "condition": map[string]any{"field": "id", "op": "exists"}}},
		Config: map[string]map[string]any{
			"pipeline":   {"on_decode_error": map[string]any{"policy": "dead_letter", "topic": dlq}},
			"checkpoint": {"timeout": "10s"},
		},
	})
	// Both run until stopped: the points need records flowing.
	prod := startProducer(t, b, j.topic, producerSpec{N: 10_000_000, Rate: 1_000})
	bad := startBadProducer(t, b, j.topic, 10_000_000, 10*time.Millisecond)
	var hit []string
	for _, afterCleanStop := range []bool{true, false} {
		for _, point := range points {
			if afterCleanStop {
				p := j.start()
				j.waitMetric(p, metricCheckpoints, func(v float64) bool { return v >= 1 }, 50*time.Millisecond, 30*time.Second)
				j.terminate(p, time.Minute)
			}
			if j.crashAt(point, perPoint) {
				hit = append(hit, point)
			}
		}
	}
	n := prod.stop(t, time.Minute)
	nBad := bad.stop(t, time.Minute)
	p := j.start()
	j.waitReady(p, 2*time.Minute)
	j.waitForAll(p, n, 2*time.Minute)
	j.waitCheckpointAtEnd(p, 2*time.Minute) // the bad records' too
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, len(hit), fmt.Sprintf("crash_points=%d", len(hit)))
	again := len(deadLettersProducedAgain(j))
	requireDeadLettersOnce(t, b, dlq, nBad, fmt.Sprintf("crash_points=%d produced_again=%d", len(hit), again))
	if again == 0 {
		t.Errorf("no run produced a completed checkpoint's dead-letter transaction again from the log, though after-persist left some uncommitted")
	}
}

// deadLettersProducedAgain are the log lines of the job's runs that say a
// restart produced a dead-letter transaction again from the log.
func deadLettersProducedAgain(j *job) []json.RawMessage {
	var out []json.RawMessage
	for _, l := range j.logsOf(msgProducedAgain) {
		var v struct {
			DeadLetter bool `json:"dead_letter"`
		}
		if json.Unmarshal(l, &v) == nil && v.DeadLetter {
			out = append(out, l)
		}
	}
	return out
}

// requireDeadLettersOnce reads the dead-letter topic to its end as a
// read_committed consumer (once the job stopped) and requires each of the
// n bad records once and nothing else.
func requireDeadLettersOnce(t *testing.T, b kafkatest.Brokers, dlq string, n int, extra string) {
	t.Helper()
	got := readCommittedValues(t, b, dlq)
	var wrong []string
	for i := range n {
		if v := badValue(i); got[v] != 1 {
			wrong = append(wrong, fmt.Sprintf("%q %d times", v, got[v]))
		}
	}
	total := 0
	for v, c := range got {
		total += c
		if i, err := strconv.Atoi(strings.TrimPrefix(v, "not json ")); err != nil || i < 0 || i >= n {
			wrong = append(wrong, fmt.Sprintf("%q, which is no bad record produced", v))
		}
	}
	t.Logf("dead letters exactly once: bad=%d read_committed=%d %s", n, total, extra)
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Errorf("dead-letter topic %s: want each of %d bad records once; %d wrong: %s", dlq, n, len(wrong), strings.Join(wrong[:min(len(wrong), 10)], "; "))
	}
}

func badValue(i int) string { return fmt.Sprintf("not json %d", i) }

// badProducer sends records that are not JSON ("not json <i>") in a
// goroutine, one every tick, up to a number or until stopped.
type badProducer struct {
	cl     *kgo.Client
	halt   chan struct{}
	done   chan struct{}
	sent   atomic.Int64 // handed to the client: 0..sent-1
	err    error        // read after done
	cancel context.CancelFunc
}

func startBadProducer(t *testing.T, b kafkatest.Brokers, topic string, n int, every time.Duration) *badProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &badProducer{cl: cl, halt: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(func() { cancel(); <-p.done; cl.Close() })
	go func() {
		defer close(p.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range n {
			select {
			case <-ctx.Done():
				p.err = ctx.Err()
				return
			case <-p.halt:
				p.err = cl.Flush(ctx)
				return
			case <-tick.C:
			}
			cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "bad-%d", i), Value: []byte(badValue(i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					cancel() // the test fails: a record lost here would look like one the job lost
				}
			})
			p.sent.Store(int64(i + 1))
		}
		p.err = cl.Flush(ctx)
	}()
	return p
}

// wait waits until every record was produced and acknowledged.
func (p *badProducer) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("bad records: not all produced within %v (%d so far)", timeout, p.sent.Load())
	}
	if p.err != nil {
		t.Fatalf("bad records: produce: %v", p.err)
	}
	return int(p.sent.Load())
}

// stop ends the production, waits until what was sent is acknowledged and
// returns how many records were sent.
func (p *badProducer) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	close(p.halt)
	return p.wait(t, timeout)
}

// readCommittedValues reads topic to the end of every partition as a
// read_committed consumer does (once the job stopped: it waits up to a
// minute for no transaction to be open) and counts each value.
func readCommittedValues(t *testing.T, b kafkatest.Brokers, topic string) map[string]int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var ends map[int32]int64
	for {
		var lso map[int32]int64
		var err error
		if ends, lso, err = stableOffsets(t, b, topic); err != nil {
			t.Fatal(err)
		}
		open := false
		for p, end := range ends {
			open = open || lso[p] < end
		}
		if !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: a transaction is still open a minute after the job stopped (ends %v, last stable offsets %v)", topic, ends, lso)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(time.Minute))
	defer cancel()
	next := map[int32]int64{}
	out := map[string]int{}
	for {
		behind := ""
		for p, end := range ends {
			if next[p] < end {
				behind = fmt.Sprintf("partition %d read to %d of %d", p, next[p], end)
			}
		}
		if behind == "" {
			return out
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("topic %s: not read to its end in time (%s)", topic, behind)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			if !r.Attrs.IsControl() {
				out[string(r.Value)]++
			}
		})
	}
}
