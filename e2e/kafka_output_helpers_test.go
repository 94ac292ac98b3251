package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// The Kafka sink's output, as a read_committed consumer sees it

// kafkaSinkSpec is a job's output topic (jobSpec.KafkaSink).
type kafkaSinkSpec struct {
	Partitions int32              // of the output topic; default 4
	Configs    map[string]*string // topic configs at creation (max.message.bytes, ...)
	// Missing names a topic but does not create it.
	Missing bool
}

var outputSeq atomic.Int64

// outputTopic creates the job's output topic on b (unless spec.Missing),
// deletes it when the test ends, and returns its name and its reader.
func outputTopic(t *testing.T, b kafkatest.Brokers, spec kafkaSinkSpec) (string, *topicOutput) {
	t.Helper()
	if spec.Partitions == 0 {
		spec.Partitions = 4
	}
	name := fmt.Sprintf("out-%s-%d-%d", shortName(t.Name()), time.Now().UnixNano(), outputSeq.Add(1))
	if !spec.Missing {
		createTopic(t, b, name, spec.Partitions, spec.Configs)
	}
	return name, &topicOutput{t: t, b: b, topic: name, counts: map[int64]int{}, next: map[int32]int64{}}
}

// createTopic creates topic with partitions and configs, waits until every
// partition has a leader, and deletes it when the test ends.
func createTopic(t testing.TB, b kafkatest.Brokers, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kafkatest.Admin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, topic)
	})
	kafkatest.WaitTopicReady(t, adm, topic, partitions)
}

// topicOutput reads an output topic from its start with a consumer of its
// own (franz-go, no group, isolation read_committed), independent of the
// connector: records of aborted transactions are never delivered, records
// of open ones not yet. It keeps control records (the markers that end
// transactions) only to know how far it has read: every record of the
// topic is transactional, so once no transaction is open the last record
// of every partition is a marker. Not safe for concurrent use.
type topicOutput struct {
	t      testing.TB
	b      kafkatest.Brokers
	topic  string
	cl     *kgo.Client
	counts map[int64]int
	lines  int
	bad    []string
	next   map[int32]int64 // the offset after the last record read (markers included), by partition
}

func (r *topicOutput) client() (*kgo.Client, error) {
	if r.cl != nil {
		return r.cl, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.b.Addrs...),
		kgo.ConsumeTopics(r.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	r.cl = cl
	r.t.Cleanup(cl.Close)
	return cl, nil
}

// poll reads for up to d and adds what it read; it reports how many
// records (markers included) it read.
func (r *topicOutput) poll(d time.Duration) (int, error) {
	cl, err := r.client()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	fs := cl.PollFetches(ctx)
	var ferr error
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
			ferr = fmt.Errorf("read %s/%d: %w", topic, p, err)
		}
	})
	if ferr != nil {
		return 0, ferr
	}
	n := 0
	fs.EachRecord(func(rec *kgo.Record) {
		n++
		r.next[rec.Partition] = max(r.next[rec.Partition], rec.Offset+1)
		if rec.Attrs.IsControl() {
			return
		}
		var v struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal(rec.Value, &v); err != nil || v.ID == nil {
			r.bad = append(r.bad, fmt.Sprintf("%s/%d@%d: not a record with an id: %.120q", rec.Topic, rec.Partition, rec.Offset, rec.Value))
			return
		}
		r.counts[*v.ID]++
		r.lines++
	})
	return n, nil
}

func (r *topicOutput) snapshot() output {
	parts := 0
	for _, n := range r.next {
		if n > 0 {
			parts++
		}
	}
	return output{counts: maps.Clone(r.counts), lines: r.lines, files: parts, bad: slices.Clone(r.bad)}
}

// read reads what the brokers hand out now: it polls until a poll brings
// nothing (at most a few seconds), so it may lag a moment behind the last
// commit.
func (r *topicOutput) read() (output, error) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, err := r.poll(300 * time.Millisecond)
		if err != nil {
			return output{}, err
		}
		if n == 0 {
			break
		}
	}
	return r.snapshot(), nil
}

// readAll reads every partition to its end. It waits up to a minute for
// the partitions' last stable offsets to reach their ends (a transaction
// the stopped job left open holds them back until the broker aborts it on
// timeout) and fails if they do not.
func (r *topicOutput) readAll() (output, error) {
	deadline := time.Now().Add(time.Minute)
	var ends map[int32]int64
	for {
		var lso map[int32]int64
		var err error
		ends, lso, err = stableOffsets(r.t, r.b, r.topic)
		if err != nil {
			return output{}, err
		}
		var open []string
		for p, end := range ends {
			if lso[p] < end {
				open = append(open, fmt.Sprintf("%d: last stable offset %d < end %d", p, lso[p], end))
			}
		}
		if len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			slices.Sort(open)
			return output{}, fmt.Errorf("topic %s: a transaction is still open a minute after the wait began (partition %s)", r.topic, strings.Join(open, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		behind := ""
		for p, end := range ends {
			if r.next[p] < end {
				behind = fmt.Sprintf("partition %d read to %d of %d", p, r.next[p], end)
				break
			}
		}
		if behind == "" {
			return r.snapshot(), nil
		}
		if time.Now().After(deadline) {
			return output{}, fmt.Errorf("topic %s: not read to its end within a minute (%s)", r.topic, behind)
		}
		if _, err := r.poll(500 * time.Millisecond); err != nil {
			return output{}, err
		}
	}
}

// stableOffsets returns the end offset (high watermark) and the last
// stable offset of every partition of topic.
func stableOffsets(t testing.TB, b kafkatest.Brokers, topic string) (ends, lso map[int32]int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kafkatest.Admin(t, b)
	he, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = he.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	ls, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ls.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("last stable offsets of %s: %w", topic, err)
	}
	ends, lso = map[int32]int64{}, map[int32]int64{}
	for p, o := range he[topic] {
		ends[p] = o.Offset
	}
	for p, o := range ls[topic] {
		lso[p] = o.Offset
	}
	return ends, lso, nil
}

// requireGroupAtInputEnd requires the job's consumer group to have
// committed the end of every partition of the input topic (call it once
// the job drained the topic and stopped).
func (j *job) requireGroupAtInputEnd() {
	j.t.Helper()
	ends := endOffsets(j.t, j.brokers, j.topic)
	committed := committedOffsets(j.t, j.brokers, j.name, j.topic)
	if !equalOffsets(committed, ends) {
		j.t.Errorf("group %s committed offsets %v, want the ends of %s %v", j.name, sorted(committed), j.topic, sorted(ends))
		return
	}
	j.t.Logf("group %s committed the ends of %s: %v", j.name, j.topic, sorted(ends))
}

// explain says where the ids that out misses or holds twice are in the
// output topic's log, read again with isolation read_uncommitted: for
// each producer id and epoch whose records hold such ids, how many and
// how its transactions ended there (an abort or commit marker of that
// producer after the records, or none yet). For a failed test's log only.
func (r *topicOutput) explain(out output, n int) string {
	wanted := map[int64]bool{}
	for id := range int64(n) {
		if out.counts[id] != 1 {
			wanted[id] = true
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.b.Addrs...), kgo.ConsumeTopics(r.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ends, _, err := stableOffsets(r.t, r.b, r.topic)
	if err != nil {
		return err.Error()
	}
	type key struct {
		pid   int64
		epoch int16
	}
	type group struct {
		ids      int
		first    time.Time
		pending  map[int32]bool // partitions whose records of this producer await a marker
		markers  map[string]int
		partsHit map[int32]bool
	}
	groups := map[key]*group{}
	byPID := map[int64][]*group{}
	found := 0
	next := map[int32]int64{}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		done := true
		for p, e := range ends {
			done = done && next[p] >= e
		}
		if done {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(rec *kgo.Record) {
			next[rec.Partition] = rec.Offset + 1
			if rec.Attrs.IsControl() {
				kind := "abort"
				if len(rec.Key) >= 4 && rec.Key[3] == 1 {
					kind = "commit"
				}
				for _, g := range byPID[rec.ProducerID] {
					if g.pending[rec.Partition] {
						delete(g.pending, rec.Partition)
						g.markers[kind]++
					}
				}
				return
			}
			var v struct {
				ID *int64 `json:"id"`
			}
			if json.Unmarshal(rec.Value, &v) != nil || v.ID == nil || !wanted[*v.ID] {
				return
			}
			found++
			k := key{rec.ProducerID, rec.ProducerEpoch}
			g := groups[k]
			if g == nil {
				g = &group{first: rec.Timestamp, pending: map[int32]bool{}, markers: map[string]int{}, partsHit: map[int32]bool{}}
				groups[k] = g
				byPID[k.pid] = append(byPID[k.pid], g)
			}
			g.ids++
			g.pending[rec.Partition] = true
			g.partsHit[rec.Partition] = true
		})
	}
	var lines []string
	for k, g := range groups {
		lines = append(lines, fmt.Sprintf("producer %d epoch %d: %d of them (first written %s) in %d partitions, ended there by %d abort and %d commit markers, %d without a marker",
			k.pid, k.epoch, g.ids, g.first.Format("15:04:05.000"), len(g.partsHit), g.markers["abort"], g.markers["commit"], len(g.pending)))
	}
	slices.Sort(lines)
	return fmt.Sprintf("%d of the %d ids missing or duplicated are in the log (read_uncommitted): %s", found, len(wanted), strings.Join(lines, "; "))
}
