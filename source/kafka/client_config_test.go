package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkaclient"
	"github.com/connector-dev/connector/internal/kafkatest"
)

// TestAWSMSKIAMWithoutCredentialsIsAConfigFault: kafka.sasl with
// mechanism AWS_MSK_IAM, no access_key_id in the file and no AWS_* in the
// process's environment. config validation accepts it (the keys may come
// from the environment), and kafkaclient's mechanism then fails every
// authentication with "kafka.sasl: AWS_MSK_IAM has no credentials". The
// process's environment never changes: no retry cures it, so Open should
// end with kafkaclient.ErrMisconfigured (exit 2), as for a refused
// password. The broker here (kfake) accepts the AWS_MSK_IAM handshake as
// MSK does; the failure is on the client's side, before any credential is
// sent.
func TestAWSMSKIAMWithoutCredentialsIsAConfigFault(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(kmsg.SASLHandshake.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return req.(*kmsg.SASLHandshakeRequest).ResponseKind(), nil, true // accepted
	})
	k := config.Kafka{Brokers: c.ListenAddrs(), ClientID: "review", SASL: config.SASL{Mechanism: config.SASLAWSMSKIAM}}
	cfg := Options{Brokers: k.Brokers, Topics: []string{"in"}, Group: "review-g",
		ClientOpts: kafkaclient.Opts(k, testLog(t)),
		Explain:    func(err error) (string, string, bool) { return kafkaclient.Explain(err, k) }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	s, err := Open(ctx, cfg, nil, testLog(t))
	if s != nil {
		s.Close()
	}
	t.Logf("Open after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, kafkaclient.ErrMisconfigured) {
		t.Fatalf("AWS_MSK_IAM without credentials: Open = %v; want kafkaclient.ErrMisconfigured at once (exit 2), not retries until the deadline", err)
	}
}

// TestLagReachesZeroAfterTrailingTransactions: a partition whose
// log ends with transaction markers (a committed transaction, then an
// aborted one) is read to its end by a read_committed reader: once the
// reader has everything, its lag must be 0, not the markers and the
// aborted records that it can never read.
func TestLagReachesZeroAfterTrailingTransactions(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 1)
	produce(t, b, topic, 1, 5)
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic),
		kgo.TransactionalID(topic+"-txn"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf(`{"txn":%v,"i":%d}`, commit, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, testConfig(b, topic), nil, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, stop := runReader(t, s.readers[0])
	defer stop()
	waitFor(t, "the 8 committed records", func() bool { return rec.count() == 8 })
	waitFor(t, "the lag after every committed record to be 0:0", func() bool {
		s.refreshLag(ctx)
		return slices.Equal(lagOf(s), []string{"0:0"})
	})
}
