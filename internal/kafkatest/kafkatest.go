package kafkatest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvBrokers is the environment variable naming a real broker.
const EnvBrokers = "KAFKA_BROKERS"

// Brokers is a broker address list for one test, and what kind it is.
type Brokers struct {
	Addrs []string
	Real  bool // Apache Kafka from KAFKA_BROKERS; false means in-process kfake
}

// String names the broker for test logs.
func (b Brokers) String() string {
	kind := "kfake"
	if b.Real {
		kind = "kafka"
	}
	return kind + "@" + strings.Join(b.Addrs, ",")
}

// Cluster returns the broker named by KAFKA_BROKERS, or else a fresh
// in-process kfake cluster that is closed when the test ends. It fails the
// test when the broker cannot be reached, or when CI is set without
// KAFKA_BROKERS.
func Cluster(t testing.TB) Brokers {
	t.Helper()
	if addrs := envAddrs(); len(addrs) > 0 {
		b := Brokers{Addrs: addrs, Real: true}
		ping(t, b)
		return b
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("kafkatest: CI is set but %s is not: run the tests through scripts/test, which starts Apache Kafka", EnvBrokers)
	}
	return Fake(t)
}

// Fake starts an in-process kfake cluster, closed when the test ends,
// whatever KAFKA_BROKERS says. For tests of behaviour that kfake models well
// enough; never the only proof of exactly-once.
func Fake(t testing.TB) Brokers {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return Brokers{Addrs: c.ListenAddrs()}
}

// RealCluster returns the Apache Kafka broker named by KAFKA_BROKERS and fails
// the test when it is unset or unreachable. Tests that prove exactly-once use it.
func RealCluster(t testing.TB) Brokers {
	t.Helper()
	addrs := envAddrs()
	if len(addrs) == 0 {
		t.Fatalf("kafkatest: this test needs Apache Kafka: set %s or run scripts/test, which starts one", EnvBrokers)
	}
	b := Brokers{Addrs: addrs, Real: true}
	ping(t, b)
	return b
}

func envAddrs() []string {
	var addrs []string
	for _, a := range strings.Split(os.Getenv(EnvBrokers), ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// Admin returns an admin client for b, closed when the test ends.
func Admin(t testing.TB, b Brokers) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		t.Fatalf("kafkatest: client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func ping(t testing.TB, b Brokers) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := Admin(t, b).BrokerMetadata(ctx); err != nil {
		t.Fatalf("kafkatest: broker %s unreachable: %v", b, err)
	}
}

var topicSeq atomic.Int64

// Topic creates a topic with a unique name and the given number of partitions
// on b, deletes it when the test ends, and returns its name.
func Topic(t testing.TB, b Brokers, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", sanitize(t.Name()), time.Now().UnixNano(), topicSeq.Add(1))
	adm := Admin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kafkatest: create topic %s: %v", name, err)
	}
	WaitTopicReady(t, adm, name, partitions)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, name)
	})
	return name
}

// WaitTopicReady waits until topic name has partitions partitions, each
// with a leader (on a real broker this follows CreateTopics by a few
// milliseconds), and returns its topic ID.
func WaitTopicReady(t testing.TB, adm *kadm.Client, name string, partitions int32) kadm.TopicID {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := adm.Metadata(ctx, name)
		cancel()
		if err == nil {
			td, ok := md.Topics[name]
			if ok && td.Err == nil && int32(len(td.Partitions)) == partitions && allLed(td) {
				return td.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: topic %s not ready after 60s (last error: %v)", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allLed(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() > 100 {
		return b.String()[:100]
	}
	return b.String()
}
