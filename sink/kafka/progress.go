package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/connector-dev/connector/checkpoint"
)

// Each writer's progress marker is the committed offset of a consumer group
// of its own, <job>.sink-progress.w<writer>, on partition 0 of the sink's
// topic: the id of the last checkpoint whose transaction it committed. The
// marker is written inside that transaction (TxnOffsetCommit), so it
// becomes visible exactly when the transaction's records do: it is the
// sink's decision record.

func progressGroup(job string, writer int) string {
	return job + ".sink-progress.w" + strconv.Itoa(writer)
}

// writerOfGroup reads a progress group's writer index; false for any other
// group.
func writerOfGroup(job, group string) (int, bool) {
	rest, ok := strings.CutPrefix(group, job+".sink-progress.w")
	if !ok {
		return 0, false
	}
	w, err := strconv.Atoi(rest)
	return w, err == nil && w >= 0 && strconv.Itoa(w) == rest
}

// addMarker puts writer's marker for checkpoint id into t's transaction:
// the progress group joins the transaction (addGroup, begun when the
// transaction began), then the offset commit.
func (s *Sink) addMarker(ctx context.Context, t *txn, id checkpoint.ID) error {
	if err := t.groupAdded(ctx, s); err != nil {
		return err
	}
	pid, epoch, err := t.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id of %s: %w", t.id, err)
	}
	group := progressGroup(s.job, t.writer)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = t.id, group, pid, epoch, -1
	topic := kmsg.NewTxnOffsetCommitRequestTopic()
	topic.Topic, topic.TopicID = s.cfg.Topic, s.topicID
	part := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	part.Partition, part.Offset = 0, int64(id)
	meta := fmt.Sprintf("connector checkpoint=%d txn=%s", id, t.id)
	part.Metadata = &meta
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, t.cl)
	if err != nil {
		return fmt.Errorf("progress marker of %s: %w", t.id, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("progress marker of %s in group %s: %w", t.id, group, err)
			}
		}
	}
	return nil
}

// addGroup adds writer's progress group to t's transaction
// (AddOffsetsToTxn). It runs in the background from the transaction's
// begin, so that the pre-commit waits for one round trip less.
func (s *Sink) addGroup(ctx context.Context, t *txn) error {
	pid, epoch, err := t.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id of %s: %w", t.id, err)
	}
	group := progressGroup(s.job, t.writer)
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = t.id, pid, epoch, group
	resp, err := add.RequestWith(ctx, t.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("add the progress group %s to transaction %s: %w", group, t.id, err)
	}
	return nil
}

// readProgress returns every writer's last committed checkpoint, for every
// progress group of the job (writers of an earlier parallelism too). It
// reads only stable offsets: a marker whose transaction is being committed
// is waited for.
func (s *Sink) readProgress(ctx context.Context) (map[int]checkpoint.ID, error) {
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := map[int]checkpoint.ID{}
	for _, g := range listed.Groups() {
		w, ok := writerOfGroup(s.job, g)
		if !ok {
			continue
		}
		offs, err := s.adm.FetchOffsets(kadm.RequireStable(ctx), g)
		if err != nil {
			if errors.Is(err, kerr.GroupIDNotFound) {
				continue
			}
			return nil, fmt.Errorf("progress of writer %d (group %s): %w", w, g, err)
		}
		if o, ok := offs.Lookup(s.cfg.Topic, 0); ok && o.Err == nil && o.At > 0 {
			out[w] = checkpoint.ID(o.At)
		}
	}
	return out, nil
}
