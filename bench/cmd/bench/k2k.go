package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka to Kafka (issue 12): the contenders read a topic of the load and
// write every record to an output topic made fresh for each run, with as
// many partitions as the input (k2kPartitions). The output counts as
// written once a read_committed consumer can read it: a partition's
// records are visible up to its last stable offset (LSO).
//
// A drain polls the output's LSOs and high watermarks every 25 ms (two
// ListOffsets requests), with the contender's CPU time and the machine's,
// until the LSOs add up to at least the record count, equal the high
// watermarks (no transaction open) and have not moved for two checkpoint
// intervals. Then it stops the contender and reads the output back with a
// read_committed consumer: every id must appear exactly once. The drain's
// end is the first sample at which every partition's LSO had passed its
// last record, which only the read-back knows (the LSO also counts the
// transactions' commit markers).

// k2kPartitions is the partition count of every topic of the load and of
// the output topics.
const k2kPartitions = 8

// k2kPrefix starts the name of every topic the k2k experiments make.
const k2kPrefix = "bench-k2k"

// flinkTxnTimeout is the Flink sink's transaction.timeout.ms: KafkaSink's
// default (1 h) is above the broker's transaction.max.timeout.ms (15 min
// by default), which refuses it. The connector's default is 10m too.
const flinkTxnTimeout = 10 * time.Minute

// kafka returns the bench's own admin client, made on first use.
func (b *bench) kafka() (*kgo.Client, *kadm.Client, error) {
	b.kmu.Lock()
	defer b.kmu.Unlock()
	if b.kcl == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b.o.brokers, ",")...))
		if err != nil {
			return nil, nil, err
		}
		b.kcl = cl
	}
	return b.kcl, kadm.NewClient(b.kcl), nil
}

// createTopic creates topic with k2kPartitions partitions, one replica.
func (b *bench) createTopic(topic string) error {
	_, adm, err := b.kafka()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, k2kPartitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Wait until its partitions answer, so that the first samples of a
	// drain are not a new topic's retries.
	for {
		_, err := b.endOffsets(ctx, topic, false)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s created, its offsets not readable: %w", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// deleteTopics deletes the bench's own topics (k2kPrefix, pgPrefix, and
// the group contenders' slot topics), logging failures.
func (b *bench) deleteTopics(topics ...string) {
	_, adm, err := b.kafka()
	if err != nil {
		b.log("delete %v: %v", topics, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 30*time.Second)
	defer cancel()
	for _, t := range topics {
		slots := strings.HasPrefix(t, groupPrefix) && strings.HasSuffix(t, ".slots")
		if !strings.HasPrefix(t, k2kPrefix+"-") && !strings.HasPrefix(t, pgPrefix+"-") && !slots {
			panic("bench deletes only topics named " + k2kPrefix + "-*, " + pgPrefix + "-* or " + groupPrefix + "*.slots, not " + t)
		}
	}
	res, err := adm.DeleteTopics(ctx, topics...)
	if err == nil {
		for _, r := range res.Sorted() {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				err = errors.Join(err, fmt.Errorf("%s: %w", r.Topic, r.Err))
			}
		}
	}
	if err != nil {
		b.log("delete topics %v: %v", topics, err)
	}
}

// endOffsets returns the end offset of each partition of topic: the high
// watermark, or with committed the last stable offset.
func (b *bench) endOffsets(ctx context.Context, topic string, committed bool) ([]int64, error) {
	cl, _, err := b.kafka()
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(k2kPartitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make([]int64, k2kPartitions)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, p.Partition, err)
			}
			if p.Partition >= 0 && p.Partition < k2kPartitions {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

// k2kSample is one poll of a k2k drain.
type k2kSample struct {
	at           time.Time // once both offsets were read
	lso          []int64   // per partition
	hwm          int64     // all partitions
	cpu          usage     // the contender's
	busy, broker time.Duration
}

// busyOthers is the machine's busy CPU time without this process's own
// (its polls, the latency runs' producer and reader).
func busyOthers() time.Duration { return cpuBusy() - selfCPU() }

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// k2kDrain runs a Kafka-to-Kafka contender over the topic into a fresh
// output topic until every record is visible to a read_committed consumer,
// then checks the output.
func (b *bench) k2kDrain(s spec) *result {
	dir, r, ok := b.begin(s)
	if !ok {
		return r
	}
	s.outTopic = k2kPrefix + "-out-" + strings.ReplaceAll(filepath.Base(dir), "_", "-")
	r.OutTopic = s.outTopic
	if err := b.createTopic(s.outTopic); err != nil {
		r.Err = err.Error()
		return r
	}
	if !b.o.keep {
		defer b.deleteTopics(s.outTopic)
	}
	busy0, broker0 := cpuBusy(), pidCPU(b.o.brokerPID)
	p, addr, err := b.launch(s, dir, false, "contender.log")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.kill()
	if s.kind == "raw" {
		b.finishRaw(r, p, busy0, broker0, s)
		if r.Err == "" {
			// Without transactions every record is visible at once:
			// read_uncommitted and read_committed read the same.
			b.verifyTopic(r, s, s.txn)
		}
		return r
	}

	N := s.topic.Records
	deadline := time.Now().Add(b.timeout(s.topic))
	settle := max(2*s.interval, time.Second) + 500*time.Millisecond
	var (
		samples    []k2kSample
		written    time.Time
		lastChange time.Time
		lastHWM    int64 = -1
	)
	gate := scrapeGate{total: N}
	for {
		if b.ctx.Err() != nil {
			r.Err = "interrupted"
			return r
		}
		if time.Now().After(deadline) {
			r.Err = fmt.Sprintf("not drained after %s: %s", b.timeout(s.topic), lastK2K(samples))
			return r
		}
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		lso, err1 := b.endOffsets(ctx, s.outTopic, true)
		hwm, err2 := b.endOffsets(ctx, s.outTopic, false)
		cancel()
		now := time.Now()
		if err := errors.Join(err1, err2); err != nil {
			b.log("%s: output offsets: %v", s.label, err)
		} else {
			u, _ := p.sample()
			smp := k2kSample{at: now, lso: lso, hwm: sum(hwm), cpu: u, busy: busyOthers(), broker: pidCPU(b.o.brokerPID)}
			samples = append(samples, smp)
			if smp.hwm != lastHWM || sum(lso) != smp.hwm {
				lastHWM, lastChange = smp.hwm, now
			}
			if sum(lso) >= N && sum(lso) == smp.hwm && now.Sub(lastChange) >= settle {
				break
			}
		}
		if s.kind == "connector" && written.IsZero() && p.alive() {
			if m, out, ok := gate.scrape(addr); ok && out >= N {
				written = time.Now()
				r.Metrics = m
			}
		}
		if !p.alive() {
			r.Err = fmt.Sprintf("exited (%v) with %s; see %s", p.err, lastK2K(samples), filepath.Join(dir, "contender.log"))
			return r
		}
		time.Sleep(25 * time.Millisecond)
	}
	if s.kind == "connector" && r.Metrics == nil {
		if m, err := scrape(addr); err == nil {
			r.Metrics = m
		}
	}
	grace := 60 * time.Second
	if s.kind == "flink" {
		grace = 20 * time.Second
	}
	if !p.stop(grace) {
		b.log("%s did not stop within %s after SIGTERM; killed", s.label, grace)
	}
	lastData := b.verifyTopic(r, s, true)

	// The drain: from the first sample with output in the log to the
	// first at which every partition's LSO had passed its last record.
	first, end := -1, len(samples)-1
	for i, smp := range samples {
		if first < 0 && smp.hwm > 0 {
			first = i
		}
		if lastData != nil && past(smp.lso, lastData) {
			end = i
			break
		}
	}
	first = max(0, min(first, end))
	f, e := samples[first], samples[end]
	b.measure(r, p, s, f.at, e.at, f.cpu, e.cpu, f.busy, f.broker, e.busy, e.broker)
	if !written.IsZero() && written.After(f.at) {
		r.Written = written.Sub(f.at).Seconds()
		r.WrittenPerS = float64(N) / r.Written
	}
	var cps []checkpointDone
	switch s.kind {
	case "connector":
		cps = connectorCheckpoints(filepath.Join(dir, "contender.log"))
	case "flink":
		cps = flinkCheckpoints(filepath.Join(dir, "contender.log.flink"))
	}
	b.checkpointStats(r, cps, e.at)
	if !b.o.keep {
		_ = os.RemoveAll(filepath.Join(dir, "data"))
		_ = os.RemoveAll(filepath.Join(dir, "checkpoints"))
	}
	return r
}

// past reports whether every partition's LSO is beyond its last record.
func past(lso []int64, lastData map[int32]int64) bool {
	for p, last := range lastData {
		if int(p) >= len(lso) || lso[p] <= last {
			return false
		}
	}
	return true
}

func lastK2K(samples []k2kSample) string {
	if len(samples) == 0 {
		return "no output offsets read"
	}
	l := samples[len(samples)-1]
	return fmt.Sprintf("output LSOs add up to %d, high watermarks to %d", sum(l.lso), l.hwm)
}

// verifyTopic reads the run's output topic back (read_committed, or
// read_uncommitted for a contender without transactions) and checks that
// every id of the load appears exactly once. It returns the offset of each
// partition's last record.
func (b *bench) verifyTopic(r *result, s spec, committed bool) map[int32]int64 {
	r.Isolation = "read_uncommitted"
	if committed {
		r.Isolation = "read_committed"
	}
	v, last, err := b.readTopic(s.outTopic, s.topic.Records, committed, nil)
	if err != nil {
		r.Verified = "verification failed: " + err.Error()
		return nil
	}
	r.Check = &v
	if v.ExactlyOnce(s.topic.Records) {
		r.Verified = "exactly once"
	} else {
		r.Verified = v.String()
	}
	if !committed {
		r.Verified += " (" + r.Isolation + ")"
	}
	return last
}

// readTopic reads topic from its start until it has read n records and no
// more came for 1.5 s (or none for 15 s), checking ids 0..n-1 as verify
// does; each record's value is passed to each, if set, with the time it was
// read. It returns the offset of each partition's last record.
func (b *bench) readTopic(topic string, n int64, committed bool, each func(v []byte, at time.Time)) (verification, map[int32]int64, error) {
	return b.consume(b.ctx, topic, n, committed, 15*time.Second, func() bool { return false }, each)
}

// consume reads topic as readTopic does, giving up after idle without a
// record; it also stops once stop returns true (checked after every fetch,
// at least every 100 ms). each sees the first copy of every id only.
func (b *bench) consume(ctx context.Context, topic string, n int64, committed bool, idle time.Duration, stop func() bool,
	each func(v []byte, at time.Time)) (verification, map[int32]int64, error) {
	var v verification
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	starts := map[int32]kgo.Offset{}
	for p := range int32(k2kPartitions) {
		starts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b.o.brokers, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return v, nil, err
	}
	defer cl.Close()
	seen := make([]uint64, (n+63)/64)
	last := map[int32]int64{}
	lastRecord := time.Now()
	for ctx.Err() == nil && !stop() {
		if v.Lines >= n && time.Since(lastRecord) > 1500*time.Millisecond {
			break
		}
		if time.Since(lastRecord) > idle {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		at := time.Now()
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("read %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return v, last, ferr
		}
		fs.EachRecord(func(rec *kgo.Record) {
			lastRecord = at
			v.Lines++
			last[rec.Partition] = max(last[rec.Partition], rec.Offset)
			id, ok := lineID(rec.Value)
			switch {
			case !ok || id >= n:
				v.Malformed++
			case seen[id/64]&(1<<(id%64)) != 0:
				v.Duplicates++
			default:
				seen[id/64] |= 1 << (id % 64)
				v.Distinct++
				if each != nil {
					each(rec.Value, at)
				}
			}
		})
	}
	v.Missing = n - v.Distinct
	return v, last, nil
}

// k2kState is the bench's Kafka client, made on first use (kafka).
type k2kState struct {
	kmu sync.Mutex
	kcl *kgo.Client
}
