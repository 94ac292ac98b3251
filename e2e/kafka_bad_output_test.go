package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestKafkaSinkOutputTopicMissingFailsNamingIt: a job whose sink.topic
// does not exist stops at start with exit status 2 (an invalid sink
// config: not retried) and an error naming the topic, and the topic still
// does not exist afterwards. It runs on the tight broker, whose
// auto.create.topics.enable is true: a client that asks for it in a
// metadata request would create the topic, and the sink must not.
func TestKafkaSinkOutputTopicMissingFailsNamingIt(t *testing.T) {
	b := tightCluster(t)
	j := newJob(t, b, jobSpec{KafkaSink: &kafkaSinkSpec{Missing: true}, Config: map[string]map[string]any{
		"checkpoint": {"timeout": "5s"},
		"sink":       {"transaction_timeout": "6s"},
		"restart":    {"initial_backoff": "100ms"},
	}})
	produceIDs(t, b, j.topic, 0, 100, false)
	p := j.start()
	j.requireConfigFailure(p, 2*time.Minute, j.outTopic, "does not exist")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	details, err := kafkatest.Admin(t, b).ListTopics(ctx, j.outTopic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", j.outTopic, err)
	}
	if d, ok := details[j.outTopic]; ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("topic %s exists after the job ran (%d partitions, error %v): the sink created it", j.outTopic, len(d.Partitions), d.Err)
	}
}

// The record-too-large tests: the output topic takes records of at most
// 4 KiB (max.message.bytes 4096) and one input record, the id tooLargeID,
// is 6 KiB; the others are the usual 100 bytes. The Kafka sink reads the
// topic's max.message.bytes at start and reports a record above it to the
// job's decode-error policy (sink.ErrBadRecord) before producing anything
// of it.
const (
	tooLargeN  = 4_000
	tooLargeID = 2_500
)

// tooLargeJob makes such a job and produces its input.
func tooLargeJob(t *testing.T, b kafkatest.Brokers, config map[string]map[string]any) *job {
	t.Helper()
	maxBytes := "4096"
	j := newJob(t, b, jobSpec{Partitions: 4, Parallelism: 2, Config: config,
		KafkaSink: &kafkaSinkSpec{Configs: map[string]*string{"max.message.bytes": &maxBytes}}})
	produceIDs(t, b, j.topic, 0, tooLargeID, false)
	produceValue(t, b, j.topic, tooLargeID, fmt.Sprintf(`{"id":%d,"pad":"%s"}`, tooLargeID, strings.Repeat("x", 6*1024)))
	produceIDs(t, b, j.topic, tooLargeID+1, tooLargeN, false)
	return j
}

// TestKafkaSinkRecordTooLargeFailsTheJobNamingIt: with
// on_decode_error.policy fail (the default), the job stops with exit
// status 1 and an error naming the record's input position, its size, the
// output topic and max.message.bytes; the output then holds no id twice
// and not the big one.
func TestKafkaSinkRecordTooLargeFailsTheJobNamingIt(t *testing.T) {
	b := cluster(t)
	j := tooLargeJob(t, b, map[string]map[string]any{"restart": {"initial_backoff": "100ms"}})
	p := j.start()
	msg, _ := j.requireFailure(p, 2*time.Minute, j.outTopic, "max.message.bytes", "4096")
	t.Logf("%s restarted the job in process %d times before it exited", p, len(j.restartErrors(p)))
	if !strings.Contains(msg, j.topic+"/") {
		t.Errorf("the failure does not name the record's input position (%s/<partition>@<offset>): %s", j.topic, msg)
	}
	out, err := j.out.readAll()
	if err != nil {
		t.Fatal(err)
	}
	if tl := tallyOutput(out, tooLargeN); tl.duplicates+tl.unexpected+tl.bad > 0 || out.counts[tooLargeID] > 0 {
		t.Errorf("after the failure: %s; the big id %d is there %d times", tl, tooLargeID, out.counts[tooLargeID])
	}
	t.Logf("after the failure %d of %d ids are in the output, none twice", out.present(tooLargeN), tooLargeN)
}

// TestKafkaSinkRecordTooLargeGoesToTheDeadLetterTopic: with
// on_decode_error.policy dead_letter, the job drains: every id but the big
// one exactly once in the output (nothing lost, nothing twice), the big
// one once in the dead-letter topic (read_committed), and the group at the
// ends of the input.
func TestKafkaSinkRecordTooLargeGoesToTheDeadLetterTopic(t *testing.T) {
	b := cluster(t)
	dlq := fmt.Sprintf("dlq-%s-%d", shortName(t.Name()), time.Now().UnixNano())
	createTopic(t, b, dlq, 1, nil)
	j := tooLargeJob(t, b, map[string]map[string]any{
		"pipeline":   {"on_decode_error": map[string]any{"policy": "dead_letter", "topic": dlq}},
		"checkpoint": {"timeout": "10s"},
	})
	p := j.start()
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	out, err := j.out.readAll()
	if err != nil {
		t.Fatal(err)
	}
	tl := tallyOutput(out, tooLargeN)
	t.Logf("exactly-once but the big id: records=%d duplicates=%d missing=%d (e.g. ids %v)", tooLargeN, tl.duplicates, tl.missing, tl.missingIDs)
	if tl.duplicates+tl.unexpected+tl.bad > 0 || tl.missing != 1 || out.counts[tooLargeID] != 0 {
		t.Errorf("want every id but %d exactly once: %s", tooLargeID, tl)
		t.Logf("where the missing and duplicated ids are: %s", j.out.(*topicOutput).explain(out, tooLargeN))
	}
	if got := deadLetterIDs(t, b, dlq); len(got) != 1 || got[0] != tooLargeID {
		t.Errorf("dead-letter topic %s holds ids %v, want %d once (read_committed), nothing else", dlq, got, tooLargeID)
	}
	j.requireGroupAtInputEnd()
}

// produceValue sends one record with key id and the given value.
func produceValue(t testing.TB, b kafkatest.Brokers, topic string, id int, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(id)), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce id %d: %v", id, err)
	}
}

// deadLetterIDs reads every record of a one-partition dead-letter topic
// and returns their ids, in order.
func deadLetterIDs(t testing.TB, b kafkatest.Brokers, topic string) []int64 {
	t.Helper()
	end := endOffsets(t, b, topic)[0]
	// Dead letters are written in transactions (exactly_once): read as a
	// read_committed consumer, with the markers kept for their offsets.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var ids []int64
	next := int64(0)
	deadline := time.Now().Add(30 * time.Second)
	for next < end && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			var v struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal(r.Value, &v) == nil {
				ids = append(ids, v.ID)
			}
		})
	}
	if next < end {
		t.Fatalf("dead-letter topic %s: read to %d of %d within 30s", topic, next, end)
	}
	return ids
}

// TestKafkaSinkClusterUnreachableAtStart: a job whose sink.brokers point
// at an address that refuses connections (a gate the test opens later)
// does not exit: its sink's recovery retries, logging each failed attempt
// ("kafka sink: cluster unreachable at start; retrying"), and /readyz
// answers 503 (restoring). Once the gate opens (it forwards to the
// cluster holding the output topic, which the sink then reaches at the
// addresses the brokers advertise), the job recovers, becomes ready and
// drains: every id once, the group at the ends of the input.
func TestKafkaSinkClusterUnreachableAtStart(t *testing.T) {
	const n = 5_000
	b := cluster(t)
	g := newGate(t, b.Addrs[0])
	j := newJob(t, b, jobSpec{Parallelism: 2, KafkaSink: &kafkaSinkSpec{},
		Config: map[string]map[string]any{"sink": {"brokers": []string{g.addr}}}})
	produceIDs(t, b, j.topic, 0, n, false)
	p := j.start()
	j.waitLogged(p, msgSinkUnreachable, 2, 2*time.Minute)
	why := j.waitNotReady(p, time.Minute)
	t.Logf("%s: %d retries logged %v after its start; /readyz: %s", p, len(j.logsOf(msgSinkUnreachable, p)),
		time.Since(p.started).Round(time.Millisecond), why)

	g.open(t)
	opened := time.Now()
	j.waitReady(p, 2*time.Minute)
	t.Logf("%s: ready %v after the sink's cluster became reachable", p, time.Since(opened).Round(time.Millisecond))
	j.waitCheckpointAtEnd(p, 2*time.Minute)
	j.terminate(p, time.Minute)
	j.requireExactlyOnce(n, 0, fmt.Sprintf("unreachable_retries=%d", len(j.logsOf(msgSinkUnreachable, p))))
	j.requireGroupAtInputEnd()
}
