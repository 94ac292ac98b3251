package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/connector-dev/connector/sink"
)

// A hanging transaction is one that the coordinator no longer holds open
// but whose end marker never reached some partition it wrote to: that
// partition's leader still holds it open, its last stable offset stays at
// the transaction's first record, and read_committed consumers of the
// partition (and a RequireStable read of a group it committed offsets to)
// wait for ever. Kafka can leave one behind when a broker restarts while
// it writes a transaction's markers (seen here with a single broker
// stopped during the job's commit; KIP-664 exists for such transactions).
//
// Recover finds the job's own: a restored segment whose records readSegment
// reads to the log's end without its end marker, where the partition's
// leader says the segment's producer holds a transaction open, after
// abortOpen found none of the job's transactions open at the coordinator.
// endHanging then ends it where it hangs (WriteTxnMarkers, what
// kafka-transactions.sh abort does), with the outcome the rest of the
// segment shows: a commit if a partition of it holds a commit marker, else
// an abort, which reproduce then writes again. Either way the segment ends
// one way in every partition and in the progress group, so no record of it
// is visible twice or lost. A restored segment whose progress marker says
// it committed is not read back; endCommittedHanging asks the leaders of
// its partitions instead, and commits it where it still hangs.

// hangingPartition is a partition where a segment's producer holds a
// transaction open at the leader.
type hangingPartition struct {
	tp               topicPartition
	epoch            int16
	coordinatorEpoch int32
}

// errHanging is readSegment's answer for a segment whose transaction hangs
// in the partitions named.
type errHanging struct {
	txn        string
	partitions []hangingPartition
	detail     string // what readSegment saw, for the log
}

func (e *errHanging) Error() string {
	return fmt.Sprintf("transaction %s hangs (its end marker never reached %d partitions): %s", e.txn, len(e.partitions), e.detail)
}

// lookOpen asks, for each partition of open (a segment's ranges whose end
// marker readSegment has not found), where its log ends and what its leader
// knows of the segment's producer. It returns the partitions where the
// producer holds the segment's transaction open and readSegment read past
// its records, and a description of every partition for the log. It asks
// for at most 5s.
func (s *Sink) lookOpen(ctx context.Context, seg segment, open map[topicPartition]prange, reached map[topicPartition]int64) ([]hangingPartition, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	for tp := range open {
		set.Add(tp.topic, tp.partition)
	}
	topics := set.Topics()
	ends, endsErr := s.adm.ListEndOffsets(ctx, topics...)
	stable, stableErr := s.adm.ListCommittedOffsets(ctx, topics...)
	producers, prodErr := s.adm.DescribeProducers(ctx, set)
	var hang []hangingPartition
	var out []string
	for _, tp := range slices.SortedFunc(maps.Keys(open), func(a, b topicPartition) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	}) {
		d := fmt.Sprintf("%s/%d from %d", tp.topic, tp.partition, open[tp].First)
		n, read := reached[tp]
		if read {
			d += fmt.Sprintf(", read to %d", n)
		} else {
			d += ", nothing read"
		}
		end, endOK := ends.Lookup(tp.topic, tp.partition)
		endOK = endOK && endsErr == nil && end.Err == nil
		if endOK {
			d += fmt.Sprintf(", log end %d", end.Offset)
		}
		if o, ok := stable.Lookup(tp.topic, tp.partition); stableErr == nil && ok && o.Err == nil {
			d += fmt.Sprintf(", last stable offset %d", o.Offset)
		}
		if prodErr != nil {
			out = append(out, d)
			continue
		}
		d += fmt.Sprintf(", producer %d: ", seg.ProducerID)
		p, ok := producers[tp.topic].Partitions[tp.partition].ActiveProducers[seg.ProducerID]
		switch {
		case !ok:
			d += "unknown to the leader"
		case p.CurrentTxnStartOffset >= 0:
			d += fmt.Sprintf("transaction open there from offset %d (epoch %d, coordinator epoch %d)", p.CurrentTxnStartOffset, p.ProducerEpoch, p.CoordinatorEpoch)
			// Read past the segment's records (its marker comes after
			// them), and open at the leader since exactly the segment's
			// first record (so it is the segment's, and no marker ended it
			// there: the leader's producer state says so, as
			// kafka-transactions.sh find-hanging reads it): it hangs. Open
			// from before it, an earlier transaction of the producer hangs
			// there too, which the segment cannot say the outcome of: said,
			// not ended.
			if read && n >= open[tp].Last && p.CurrentTxnStartOffset == open[tp].First {
				hang = append(hang, hangingPartition{tp: tp, epoch: p.ProducerEpoch, coordinatorEpoch: p.CoordinatorEpoch})
			}
		default:
			d += fmt.Sprintf("no transaction open there (epoch %d)", p.ProducerEpoch)
		}
		out = append(out, d)
	}
	return hang, strings.Join(out, "; ")
}

// endHanging ends the hanging transaction of c's segment seg in the
// partitions of h and, if inGroup and it hangs there too, in the partition
// of __consumer_offsets holding c's writer's progress group: committed if
// commit (a partition of the segment, or the progress group, shows it
// committed), else aborted. It returns nil once the markers are written,
// else an error Recover retries.
func (s *Sink) endHanging(ctx context.Context, c sink.Committable, seg segment, commit, inGroup bool, h *errHanging) error {
	// The premise, asked again right before acting: the coordinator holds
	// no transaction of the id open (abortOpen saw none, but only of the
	// ids it could list). One it still ends would write its own markers.
	described, err := s.adm.DescribeTransactions(ctx, seg.TxnID)
	d, ok := described[seg.TxnID]
	if err == nil && !ok {
		err = fmt.Errorf("not in the answer")
	}
	if err == nil {
		err = d.Err
	}
	if errors.Is(err, kerr.TransactionalIDNotFound) {
		err = nil // forgotten (expired): nothing of it is open there
	}
	if err != nil {
		return fmt.Errorf("%w: %w; asking its coordinator about it: %w", errUnreachable, h, err)
	}
	if (TxnState{State: d.State}).Open() {
		return fmt.Errorf("%w: %w; but its coordinator holds it open (%s): waiting for it to end", errUnreachable, h, d.State)
	}
	parts := slices.Clone(h.partitions)
	if inGroup {
		group := progressGroup(s.job, c.Writer)
		gp, err := s.hangingInGroup(ctx, group, seg.ProducerID)
		if err != nil {
			return fmt.Errorf("%w: %w; looking for it in the progress group %s: %w", errUnreachable, h, group, err)
		}
		if gp != nil {
			parts = append(parts, *gp)
		}
	}
	var markers []kadm.TxnMarkers
	var where []string
	for _, p := range parts {
		markers = append(markers, kadm.TxnMarkers{
			ProducerID: seg.ProducerID, ProducerEpoch: p.epoch, Commit: commit,
			CoordinatorEpoch: max(0, p.coordinatorEpoch), // -1: no marker seen there yet
			Topics:           kadm.TopicsSet{p.tp.topic: {p.tp.partition: {}}},
		})
		where = append(where, fmt.Sprintf("%s/%d", p.tp.topic, p.tp.partition))
	}
	outcome := "ABORT"
	if commit {
		outcome = "COMMIT"
	}
	resp, err := s.adm.WriteTxnMarkers(ctx, markers...)
	if err == nil {
		resp.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
			if r.Err != nil && err == nil {
				err = fmt.Errorf("%s/%d: %w", r.Topic, r.Partition, r.Err)
			}
		})
	}
	if err != nil {
		// What to do: an abort by hand is right only for a transaction
		// that aborted. No Kafka tool writes a commit marker, and an abort
		// of a committed one would hide records that nothing produces
		// again.
		remedy := "grant the connector's principal ClusterAction on the cluster, or end it with kafka-transactions.sh abort in each of these partitions"
		if commit {
			remedy = "grant the connector's principal ClusterAction on the cluster; do not abort it by hand: it committed, and its records there would be lost"
		}
		err = fmt.Errorf("%w; ending it with %s markers in %s failed (%s): %w", h, outcome, strings.Join(where, ", "), remedy, err)
		return fmt.Errorf("%w: %w", errUnreachable, err) // retried and logged until it ends
	}
	s.log.Warn().Uint64("checkpoint", uint64(c.Checkpoint)).Int("writer", c.Writer).Str("txn", seg.TxnID).Int64("producer_id", seg.ProducerID).
		Str("outcome", outcome).Strs("partitions", where).Str("seen", h.detail).
		Msg("kafka sink: a transaction of the job hung (the coordinator ended it, its end markers never reached these partitions: seen after a broker restart); ended it there, as the rest of it shows")
	return nil
}

// endCommittedHanging ends, with commit markers, the transactions of
// restored segments that the progress says committed but whose commit
// marker never reached a partition they wrote: the partition's leader
// still holds the segment's producer's transaction open from the
// segment's first record, and the partition's last stable offset waits
// there, so read_committed consumers of the output see nothing past it.
// Recover reads no such segment back (its progress says it is done), so
// this looks at their partitions in one DescribeProducers.
//
// The open transaction is the segment's only while the producer's epoch
// there is still the segment's: a later transaction of a bumped epoch
// (a restart's, or any under transaction.version 2) that wrote to the
// partition joined it, and its outcome is not the segment's to say. That
// one is logged as an error, not ended. The progress group's partition is
// left alone: the progress was read, so what the producer holds open there
// is a later transaction.
//
// Where the leaders cannot be asked (DescribeProducers needs Read on the
// topic), it warns and the start goes on, as before this check. A hang it
// found and could not end is returned: Recover retries (not ready), since
// the producer's next transaction in the partition would join it.
func (s *Sink) endCommittedHanging(ctx context.Context, committed []sink.Committable) error {
	type entry struct {
		c   sink.Committable
		seg segment
	}
	var segs []entry
	set := kadm.TopicsSet{}
	for _, c := range committed {
		seg, err := decodeSegment(c)
		if err != nil || len(seg.Ranges) == 0 {
			continue // a bad one fails where it is read; an empty one wrote nothing
		}
		segs = append(segs, entry{c, seg})
		for _, r := range seg.Ranges {
			set.Add(r.Topic, r.Partition)
		}
	}
	if len(segs) == 0 {
		return nil
	}
	producers, err := s.adm.DescribeProducers(ctx, set)
	var shards *kadm.ShardErrors
	if err != nil && !(errors.As(err, &shards) && !shards.AllFailed) {
		s.log.Warn().Err(err).Msg("kafka sink: could not ask the output partitions' leaders whether a committed transaction of the job hangs there (DescribeProducers needs Read on the topic); not looked at")
		return nil
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("kafka sink: some output partitions' leaders did not say whether a committed transaction of the job hangs there; looked at the others")
	}
	for _, e := range segs {
		h := &errHanging{txn: e.seg.TxnID}
		var where []string
		for _, r := range e.seg.Ranges {
			pp := producers[r.Topic].Partitions[r.Partition]
			if pp.Err != nil {
				s.log.Warn().Err(pp.Err).Str("topic", r.Topic).Int32("partition", r.Partition).
					Msg("kafka sink: the partition's leader did not say whether a committed transaction of the job hangs there; not looked at")
				continue
			}
			p, ok := pp.ActiveProducers[e.seg.ProducerID]
			switch {
			case !ok || p.CurrentTxnStartOffset != r.First:
			case p.ProducerEpoch != e.seg.Epoch:
				s.log.Error().Uint64("checkpoint", uint64(e.c.Checkpoint)).Int("writer", e.c.Writer).Str("txn", e.seg.TxnID).
					Str("topic", r.Topic).Int32("partition", r.Partition).Int64("from", r.First).Int16("epoch", p.ProducerEpoch).Int16("segment_epoch", e.seg.Epoch).
					Msg("kafka sink: a committed transaction of the job hangs in this partition (its commit marker never came), and a later transaction of its producer joined it there: not ended, its outcome is not the segment's to say; read_committed consumers of the partition see nothing past it until it is ended by hand (kafka-transactions.sh find-hanging)")
			default:
				h.partitions = append(h.partitions, hangingPartition{tp: topicPartition{r.Topic, r.Partition}, epoch: p.ProducerEpoch, coordinatorEpoch: p.CoordinatorEpoch})
				where = append(where, fmt.Sprintf("%s/%d open from %d (epoch %d, coordinator epoch %d)", r.Topic, r.Partition, r.First, p.ProducerEpoch, p.CoordinatorEpoch))
			}
		}
		if len(h.partitions) == 0 {
			continue
		}
		h.detail = fmt.Sprintf("its progress marker says checkpoint %d committed; its producer %d holds it open in %s", e.c.Checkpoint, e.seg.ProducerID, strings.Join(where, ", "))
		if err := s.endHanging(ctx, e.c, e.seg, true, false, h); err != nil {
			return err
		}
	}
	return nil
}

// hangingInGroup returns the partition of __consumer_offsets that holds
// group, if producer holds a transaction open there (its offset commit in
// the group pending for ever), else nil.
func (s *Sink) hangingInGroup(ctx context.Context, group string, producer int64) (*hangingPartition, error) {
	const offsets = "__consumer_offsets"
	details, err := s.adm.ListTopicsWithInternal(ctx, offsets)
	if err != nil {
		return nil, err
	}
	d, ok := details[offsets]
	if ok && errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return nil, nil // no group has committed offsets yet: nothing hangs there
	}
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return nil, fmt.Errorf("no metadata for %s: %v", offsets, d.Err)
	}
	tp := topicPartition{offsets, groupPartition(group, len(d.Partitions))}
	described, err := s.adm.DescribeProducers(ctx, kadm.TopicsSet{offsets: {tp.partition: {}}})
	if err != nil {
		return nil, err
	}
	pp := described[offsets].Partitions[tp.partition]
	if pp.Err != nil {
		return nil, pp.Err
	}
	p, ok := pp.ActiveProducers[producer]
	if !ok || p.CurrentTxnStartOffset < 0 {
		return nil, nil
	}
	return &hangingPartition{tp: tp, epoch: p.ProducerEpoch, coordinatorEpoch: p.CoordinatorEpoch}, nil
}

// groupPartition is the partition of __consumer_offsets (of n) that holds
// group: Kafka's Utils.abs(group.hashCode()) % n, with Java's String
// hashCode over the name's UTF-16 code units.
func groupPartition(group string, n int) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(n)
}
