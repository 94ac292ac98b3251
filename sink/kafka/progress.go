package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	return whileConcurrent(ctx, func() error {
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
	})
}

// whileConcurrent runs fn, a request on a transaction, again while the
// broker answers CONCURRENT_TRANSACTIONS: the slot's previous transaction
// is still being completed (a slot is reused as soon as its commit
// returned). franz-go does so for the requests it makes; these two are
// ours. It gives up after 30 s or when ctx ends.
func whileConcurrent(ctx context.Context, fn func() error) error {
	backoff := 10 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn()
		if !errors.Is(err, kerr.ConcurrentTransactions) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
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
	err = whileConcurrent(ctx, func() error {
		resp, err := add.RequestWith(ctx, t.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("add the progress group %s to transaction %s: %w", group, t.id, err)
	}
	return nil
}

// readProgress returns every writer's last committed checkpoint, for every
// progress group of the job (writers of an earlier parallelism too).
//
// stable reads wait for markers whose transactions are ending: a group
// with a marker pending in a transaction answers UNSTABLE_OFFSET_COMMIT,
// returned as a retriable error (Recover reads stable after it aborted the
// job's open transactions, so the wait is short). Otherwise a pending
// marker is left out: the read gives the last committed one, which is
// what the start's check and the operator's listing want (a marker in a
// transaction of a crashed process would otherwise hold them up until the
// broker's transaction timeout).
func (s *Sink) readProgress(ctx context.Context, stable bool) (map[int]checkpoint.ID, error) {
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	fctx := ctx
	if stable {
		fctx = kadm.RequireStable(ctx)
	}
	out := map[int]checkpoint.ID{}
	for _, g := range listed.Groups() {
		w, ok := writerOfGroup(s.job, g)
		if !ok {
			continue
		}
		offs, err := s.adm.FetchOffsets(fctx, g)
		if err != nil {
			if errors.Is(err, kerr.GroupIDNotFound) {
				continue
			}
			return nil, fmt.Errorf("progress of writer %d (group %s): %w", w, g, err)
		}
		o, ok := offs.Lookup(s.cfg.Topic, 0)
		switch {
		case !ok:
		case o.Err != nil:
			return nil, fmt.Errorf("progress of writer %d (group %s): %w", w, g, o.Err)
		case o.At > 0:
			out[w] = checkpoint.ID(o.At)
		}
	}
	return out, nil
}
