package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/connector-dev/connector/internal/kafkatest"
)

// ---------------------------------------------------------------------------
// Topics deleted and made again under the same name

// topicID returns the topic's ID (KIP-516), as the broker has it now.
func topicID(t testing.TB, b kafkatest.Brokers, topic string) kadm.TopicID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	details, err := kafkatest.Admin(t, b).ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of topic %s: %v", topic, err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		t.Fatalf("metadata of topic %s: missing (%v)", topic, d.Err)
	}
	return d.ID
}

// deleteTopic deletes topic and waits until the broker no longer lists it.
func deleteTopic(t testing.TB, b kafkatest.Brokers, topic string) {
	t.Helper()
	adm := kafkatest.Admin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resps, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		details, err := adm.ListTopics(ctx, topic)
		cancel()
		if err == nil {
			if d, ok := details[topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s still listed 30s after its deletion (last error: %v)", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createTopicAgain creates the deleted topic again with partitions
// partitions (retrying while the broker still finishes the deletion), waits
// until every partition has a leader, and returns the new topic's ID. The
// topic is deleted when the test ends (kafkatest.Topic's cleanup goes by
// name).
func createTopicAgain(t testing.TB, b kafkatest.Brokers, topic string, partitions int32) kadm.TopicID {
	t.Helper()
	adm := kafkatest.Admin(t, b)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) || time.Now().After(deadline) {
			t.Fatalf("create topic %s again: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return kafkatest.WaitTopicReady(t, adm, topic, partitions)
}
