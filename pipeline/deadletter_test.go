package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/transform"
)

// refusingWriter refuses every record as the sinks refuse one they cannot
// hold (a Kafka sink's too-large record, a Postgres NOT NULL column).
type refusingWriter struct{}

func (refusingWriter) Write(context.Context, *record.Record) error {
	return fmt.Errorf("%w: column total is NOT NULL and field total is absent or null", sink.ErrBadRecord)
}
func (refusingWriter) PreCommit(context.Context, checkpoint.ID) ([]sink.Committable, error) {
	return nil, nil
}
func (refusingWriter) Committed(checkpoint.ID) {}
func (refusingWriter) Close() error            { return nil }

// newDLQ starts an in-process broker with topics in and dlq (made with
// dlqConfigs), and returns the bad-record policy dead_letter made as
// openDeadLetter makes it, and a consumer of dlq.
func newDLQ(t *testing.T, dlqConfigs map[string]*string) (*badRecords, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := context.Background()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, dlqConfigs, "dlq"); err != nil {
		t.Fatal(err)
	}
	prod, limit, err := dialDeadLetter(ctx, "dlq", []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("dlq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	bad := &badRecords{policy: config.DecodeDeadLetter, topic: "dlq", dlq: prod, limit: limit,
		metrics: newJobMetrics(prometheus.NewRegistry()), log: zerolog.Nop()}
	return bad, cons
}

// README "Bad records": dead_letter produces the record "unchanged". A
// record the sink refuses has been through the transforms: its dead letter
// held the projected value, the fields project dropped gone for good.
func TestADeadLetterOfARecordTheSinkRefusedIsTheSourceRecord(t *testing.T) {
	bad, cons := newDLQ(t, nil)
	p, err := transform.NewProject(transform.ProjectConfig{Keep: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	const orig = `{"id":1,"total":null,"customer":"c-9","lines":[1,2]}`
	w := &worker{task: task{workerTask, 0}, chain: transform.NewChain(p), writer: refusingWriter{},
		bad: bad, metrics: bad.metrics, log: zerolog.Nop()}
	ctx := context.Background()
	b := batch{{Topic: "in", Partition: 0, Offset: 7, Timestamp: time.Unix(1, 0), Value: []byte(orig)}}
	if err := w.process(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := bad.flush(ctx); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	recs := cons.PollFetches(pctx).Records()
	if len(recs) != 1 {
		t.Fatalf("dead-letter topic holds %d records, want 1", len(recs))
	}
	if !bytes.Equal(recs[0].Value, []byte(orig)) {
		t.Errorf("dead letter value %s, want the record as it came from Kafka: %s", recs[0].Value, orig)
	}
}

// deadLetterOf dead-letters a record of value v (not JSON) at offset 9 and
// returns what the dead-letter topic holds.
func deadLetterOf(t *testing.T, bad *badRecords, cons *kgo.Client, v []byte) *kgo.Record {
	t.Helper()
	ctx := context.Background()
	r := &record.Record{Topic: "in", Partition: 0, Offset: 9, Timestamp: time.Unix(1, 0), Key: []byte("k"), Value: v,
		Headers: []record.Header{{Key: "trace", Value: []byte("t-1")}}}
	cause := &transform.DecodeError{Topic: r.Topic, Offset: r.Offset, Msg: "not a JSON object"}
	if err := bad.handle(ctx, nil, r, fmt.Errorf("transform 0:filter: %w", cause)); err != nil {
		t.Fatalf("handle: %v", err)
	}
	if err := bad.flush(ctx); err != nil {
		t.Fatalf("flush after dead-lettering a %d-byte record: %v (fatal: %v)", len(v), err, errors.Is(err, errFatal))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	recs := cons.PollFetches(pctx).Records()
	if len(recs) != 1 {
		t.Fatalf("dead-letter topic holds %d records, want 1", len(recs))
	}
	return recs[0]
}

func header(kr *kgo.Record, key string) (string, bool) {
	for _, h := range kr.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// A record larger than the dead-letter topic takes (a source topic with a
// larger max.message.bytes, or a record the Kafka sink refused as too
// large for its own topic of the same limit) was handed to the producer
// whole: franz-go refused it, the next barrier's flush failed the task,
// and the restart met the same record again until the job gave up. It is
// now cut to fit, saying so in a header, its origin headers whole.
func TestAnOversizedDeadLetterIsCutToFitItsTopic(t *testing.T) {
	bad, cons := newDLQ(t, nil)
	if bad.limit != 1048588 {
		t.Fatalf("limit %d, want the topic's max.message.bytes, the brokers' default 1048588", bad.limit)
	}
	v := bytes.Repeat([]byte("x"), 1_100_000)
	kr := deadLetterOf(t, bad, cons, v)
	if n, _ := header(kr, "connector.original.value_bytes"); n != "1100000" {
		t.Errorf("connector.original.value_bytes %q, want 1100000", n)
	}
	if len(kr.Value) == 0 || len(kr.Value) >= len(v) || !bytes.HasPrefix(v, kr.Value) {
		t.Errorf("value of %d bytes, want the record's first bytes, cut", len(kr.Value))
	}
	for k, want := range map[string]string{"connector.source.topic": "in", "connector.source.partition": "0", "connector.source.offset": "9", "trace": "t-1"} {
		if got, _ := header(kr, k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if string(kr.Key) != "k" {
		t.Errorf("key %q, want k (only the value needed cutting)", kr.Key)
	}
}

// A dead-letter topic that takes larger records gets them whole.
func TestADeadLetterTopicsOwnLimitIsUsed(t *testing.T) {
	limit := "2000000"
	bad, cons := newDLQ(t, map[string]*string{"max.message.bytes": &limit})
	if bad.limit != 2_000_000 {
		t.Fatalf("limit %d, want the topic's max.message.bytes 2000000", bad.limit)
	}
	v := bytes.Repeat([]byte("x"), 1_100_000)
	kr := deadLetterOf(t, bad, cons, v)
	if _, cut := header(kr, "connector.original.value_bytes"); cut || !bytes.Equal(kr.Value, v) {
		t.Errorf("a %d-byte dead letter under the topic's limit was cut to %d bytes", len(v), len(kr.Value))
	}
}

// fitDeadLetter cuts the value first, then the key, then the record's own
// headers, then the error's text; never the origin headers.
func TestFitDeadLetterCutsInOrder(t *testing.T) {
	mk := func(key, value, own int) *kgo.Record {
		r := &record.Record{Topic: "in", Offset: 5, Key: bytes.Repeat([]byte("k"), key), Value: bytes.Repeat([]byte("v"), value)}
		for range own {
			r.Headers = append(r.Headers, record.Header{Key: "h", Value: bytes.Repeat([]byte("h"), 100)})
		}
		return deadLetter("dlq", r, errors.New(strings.Repeat("e", 300)))
	}
	size := kafkaclient.RecordBytes
	for _, c := range []struct {
		key, value, own, limit int
		cut                    string
	}{
		{10, 100, 1, 10_000, ""},
		{10, 5000, 1, 2000, "value_bytes"},
		{5000, 100, 1, 2000, "value_bytes,key_bytes"},
		{10, 100, 30, 2000, "value_bytes,key_bytes,headers"},
		{0, 0, 0, 400, "error"},
	} {
		kr := mk(c.key, c.value, c.own)
		got := fitDeadLetter(kr, c.limit)
		if got != c.cut {
			t.Errorf("%+v: cut %q, want %q", c, got, c.cut)
		}
		if size(kr) > c.limit {
			t.Errorf("%+v: %d bytes after the cut, over the limit", c, size(kr))
		}
		if v, _ := header(kr, "connector.source.offset"); v != "5" {
			t.Errorf("%+v: the origin offset header is %q", c, v)
		}
	}
}
