package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/connector-dev/connector/source"
)

// Position policies (Config.OnPositionLost).
const (
	PositionLostFail     = "fail"
	PositionLostEarliest = "earliest"
)

// classify turns a broker error into ErrUnreachable (retried: the broker
// is down, the topic does not exist yet) or source.ErrPermanent (a topic
// name the broker refuses, a missing authorization: no retry helps).
func classify(what string, err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		return fmt.Errorf("%w: %s: %w", source.ErrPermanent, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnreachable, what, err)
}

// topicIDs looks up the ID of every configured topic. A topic that does
// not exist (yet) is ErrUnreachable, so Open waits for it; an invalid or
// forbidden one is permanent.
func (s *Source) topicIDs(ctx context.Context) (map[string]kadm.TopicID, error) {
	details, err := s.adm.ListTopics(ctx, s.cfg.Topics...)
	if err != nil {
		return nil, classify(fmt.Sprintf("metadata of %v", s.cfg.Topics), err)
	}
	ids := map[string]kadm.TopicID{}
	var errs []error
	for _, t := range s.cfg.Topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			errs = append(errs, fmt.Errorf("%w: topic %s does not exist", ErrUnreachable, t))
		case d.Err != nil:
			errs = append(errs, classify("topic "+t, d.Err))
		default:
			ids[t] = d.ID
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ids, nil
}

// lostPosition is one partition whose restored position does not apply:
// why, and where it goes on from under on_position_lost: earliest, with
// the leader epoch that offset follows (-1: unknown).
type lostPosition struct {
	topic     string
	partition int32
	why       string
	from      int64
	epoch     int32
}

// recreatedSince says whether a topic whose ID a position recorded as was
// (base64; empty without IDs) has been deleted and created again: its ID
// is now another.
func recreatedSince(was string, now kadm.TopicID) bool {
	return was != "" && now != (kadm.TopicID{}) && was != now.String()
}

// checkRestored compares the restored positions with the topics as they
// are: a topic whose ID changed (deleted and recreated: its offsets mean
// nothing), an offset below the log start (records deleted by retention
// before they were read), above the log end (the log was truncated, or the
// topic recreated), or negative (not an offset); and, for the others, the
// leader epochs they follow with where the leaders' logs say those end
// (checkEpochs: a log truncated below the position). Under policy earliest
// the lost partitions start at their log start (a truncated log's at the
// end of the epoch read, where the log diverged), and it says so at error
// level; under fail it returns a permanent error naming each.
func (s *Source) checkRestored(ctx context.Context, restored *position, ids map[string]kadm.TopicID, starts, ends Offsets) error {
	if restored.Epochs == nil {
		restored.Epochs = Offsets{}
	}
	var lost, beyond []lostPosition
	for _, t := range s.cfg.Topics {
		was, now := restored.TopicIDs[t], ids[t]
		recreated := recreatedSince(was, now)
		for p, n := range restored.Offsets[t] {
			start, okS := starts.Lookup(t, p)
			end, okE := ends.Lookup(t, p)
			var why string
			switch {
			case recreated:
				why = fmt.Sprintf("topic %s was deleted and recreated (topic id %s at the checkpoint, %s now)", t, was, now)
			case !okS || !okE:
				why = fmt.Sprintf("partition %s/%d no longer exists", t, p)
			case n < 0:
				why = fmt.Sprintf("offset %d is not an offset", n)
			case n > end:
				why = fmt.Sprintf("offset %d is beyond the log end %d (the log was truncated, or the topic recreated)", n, end)
				if e, ok := restored.Epochs.Lookup(t, p); ok && e >= 0 {
					// A log truncated below the position (an unclean
					// leader election) mostly holds fewer new records than
					// it lost: its epoch says where it diverged
					// (checkEpochs), not the log start.
					beyond = append(beyond, lostPosition{topic: t, partition: p, why: why, from: start, epoch: -1})
					continue
				}
			case n < start:
				why = fmt.Sprintf("offset %d is below the log start %d: %d records were deleted by retention before they were read", n, start, start-n)
			default:
				continue
			}
			lost = append(lost, lostPosition{topic: t, partition: p, why: why, from: start, epoch: -1})
		}
	}
	checked := restored
	if len(lost) > 0 { // check the others' epochs only
		checked = &position{Offsets: restored.Offsets.Clone(), Epochs: restored.Epochs}
		for _, l := range lost {
			checked.Offsets.Delete(l.topic, l.partition)
		}
	}
	truncated, err := s.checkEpochs(ctx, checked)
	if err != nil {
		return err
	}
	lost = append(lost, truncated...)
	for _, b := range beyond { // beyond the end, and its epoch did not say where it diverged
		if !slices.ContainsFunc(truncated, func(l lostPosition) bool { return l.topic == b.topic && l.partition == b.partition }) {
			lost = append(lost, b)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	slices.SortFunc(lost, func(a, b lostPosition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	var lines []string
	for _, l := range lost {
		lines = append(lines, fmt.Sprintf("%s/%d: %s", l.topic, l.partition, l.why))
	}
	if s.cfg.OnPositionLost != PositionLostEarliest {
		return fmt.Errorf("%w: the checkpoint's positions no longer apply: %s. Set source.on_position_lost: earliest to start these partitions from their log start (a truncated log's from where it diverged)",
			source.ErrPermanent, strings.Join(lines, "; "))
	}
	for _, l := range lost {
		start, _ := starts.Lookup(l.topic, l.partition)
		from, epoch := l.from, l.epoch
		if from < start { // a truncated log's diverging offset, since deleted by retention
			from, epoch = start, -1
		}
		restored.Offsets.Set(l.topic, l.partition, from)
		setEpoch(restored.Epochs, l.topic, l.partition, epoch)
		s.log.Error().Str("topic", l.topic).Int32("partition", l.partition).Int64("from", from).Str("why", l.why).
			Msg("position lost: the partition goes on from its log start, or from where its truncated log diverged (source.on_position_lost: earliest)")
	}
	return nil
}

// checkTopics is Run's look at the topics while the job runs: a topic
// deleted, or deleted and recreated, stops the job (the restart's restore
// then applies source.on_position_lost), instead of reading nothing while
// looking healthy.
func (s *Source) checkTopics(ctx context.Context) error {
	details, err := s.adm.ListTopics(ctx, s.cfg.Topics...)
	if err != nil {
		return nil // unreachable: Health says so; nothing to conclude
	}
	for _, t := range s.cfg.Topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("topic %s was deleted while the job read it", t)
		case d.Err != nil:
			continue
		case s.ids[t] != (kadm.TopicID{}) && d.ID != s.ids[t]:
			return fmt.Errorf("topic %s was deleted and recreated while the job read it (topic id %s, now %s)", t, s.ids[t], d.ID)
		}
	}
	return nil
}
