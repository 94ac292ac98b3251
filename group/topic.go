package group

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/kafkaclient"
)

// ErrSlotsChanged: the slot topic has another number of partitions than
// instances.slots. A slot's checkpoints hold its partitions, so the count
// cannot change under a job.
var ErrSlotsChanged = errors.New("instances.slots changed")

// ensureTopic creates the slot topic, with one partition per slot, or
// checks the one there. It retries while the brokers cannot be reached,
// logging each failure, until ctx ends; a refusal (no right to create
// topics, the partition count changed) is returned, classed
// kafkaclient.ErrMisconfigured.
func (m *Member) ensureTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(kafkaclient.Opts(m.cfg.Kafka, m.log)...)
	if err != nil {
		return fmt.Errorf("group admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	backoff := 100 * time.Millisecond
	for {
		err := m.ensureTopicOnce(ctx, adm)
		switch {
		case ctx.Err() != nil:
			return nil // stopped while starting: not a failure
		case err == nil || errors.Is(err, kafkaclient.ErrMisconfigured):
			return err
		}
		// Refused credentials or TLS are the config's, as in single mode
		// (the source explains them): exit 2 naming the key, not retry.
		if key, hint, misconfigured := kafkaclient.Explain(err, m.cfg.Kafka); misconfigured {
			return cfgkey.Wrap(key, fmt.Errorf("%w: %s (%v)", kafkaclient.ErrMisconfigured, hint, err))
		}
		m.log.Warn().Err(err).Dur("backoff_ms", backoff).Msg("cannot set up the job's slot topic yet (brokers unreachable or busy); retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (m *Member) ensureTopicOnce(ctx context.Context, adm *kadm.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	want := int32(m.cfg.Instances.Slots)
	// No record is ever written: the smallest segments and retention keep
	// the topic near nothing on the brokers.
	retention := "3600000"
	resp, err := adm.CreateTopic(ctx, want, -1, map[string]*string{"retention.ms": &retention}, m.topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		m.log.Info().Str("topic", m.topic).Int32("partitions", want).Msg("created the job's slot topic")
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
	case errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed):
		// Kafka refuses a creation without the right even when the topic
		// exists: one an administrator made will do.
		if d, derr := m.describeTopic(ctx, adm); derr == nil && d.Err == nil && len(d.Partitions) > 0 {
			break
		}
		return fmt.Errorf("%w: creating the job's slot topic %s (%d partitions, one per slot) was refused: %w; create it, or grant CREATE",
			kafkaclient.ErrMisconfigured, m.topic, want, err)
	default:
		return fmt.Errorf("create the slot topic %s: %w", m.topic, err)
	}
	d, err := m.describeTopic(ctx, adm)
	if err == nil {
		err = d.Err
	}
	if err != nil {
		return fmt.Errorf("describe the slot topic %s: %w", m.topic, err)
	}
	if got := int32(len(d.Partitions)); got != want {
		return cfgkey.Wrap("instances.slots", fmt.Errorf("%w: %w: instances.slots is %d, but the job's slot topic %s has %d partitions: each slot's checkpoints hold its partitions, so the count cannot change (set it back to %d)",
			kafkaclient.ErrMisconfigured, ErrSlotsChanged, want, m.topic, got, got))
	}
	return nil
}

// describeTopic lists the slot topic's partitions.
func (m *Member) describeTopic(ctx context.Context, adm *kadm.Client) (kadm.TopicDetail, error) {
	details, err := adm.ListTopics(ctx, m.topic)
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	d, ok := details[m.topic]
	if !ok {
		return kadm.TopicDetail{}, fmt.Errorf("the brokers do not list it")
	}
	return d, nil
}
