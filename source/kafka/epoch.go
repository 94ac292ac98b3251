package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Log truncation (KIP-320). A partition's log can lose its end: after an
// unclean leader election (unclean.leader.election.enable), the new leader
// is a replica that had not copied the last records, the others cut their
// logs back to it, and new records take the lost ones' offsets. A reader
// positioned past the cut would then skip the new records there without a
// sign, or a restore from a checkpoint past it would. Each batch carries
// the leader epoch it was written in, and a leader knows where each epoch
// of its log ends, so the source keeps, with each position, the epoch of
// the batch it follows:
//
//   - each fetch sends it (LastFetchedEpoch): a leader whose log diverged
//     from it before the fetched offset answers with where (DivergingEpoch)
//     instead of records, and the reader stops with errDiverged (the job
//     restarts from its last checkpoint);
//   - a restore asks each leader where the epoch of each restored position
//     ends (OffsetForLeaderEpoch, checkEpochs): an end below the position
//     means records the checkpoint counts as read are no longer in the log,
//     and source.on_position_lost decides, as for any position lost: fail,
//     or (earliest) go on from the end of that epoch, the first offset the
//     new log does not share with what was read.
//
// A position whose epoch is unknown (a checkpoint of a version before,
// records of a message format before 0.11, a leader that does not know the
// epoch any more) is not checked.

// errDiverged is a fetch whose partition's log no longer holds the end of
// what the reader read: it was truncated below the fetched offset.
var errDiverged = errors.New("the partition's log diverged from what was read: it was truncated below the fetched offset (an unclean leader election?)")

// epochTable is a reader's leader epoch of the batch each partition's
// fetch position follows, as its fetchers hand responses on: what their
// fetches send as LastFetchedEpoch. Its fetchers' sessions share it.
type epochTable struct {
	mu sync.Mutex
	o  Offsets
}

func newEpochTable(start Offsets) *epochTable { return &epochTable{o: start.Clone()} }

// lookup returns a partition's epoch, -1 if unknown.
func (e *epochTable) lookup(topic string, partition int32) int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n, ok := e.o.Lookup(topic, partition); ok {
		return int32(n)
	}
	return -1
}

// update takes the epochs of a response handed on.
func (e *epochTable) update(epochs Offsets) {
	e.mu.Lock()
	defer e.mu.Unlock()
	setEpochs(e.o, epochs)
}

// setEpochs copies epochs into o, forgetting the partitions whose epoch is
// unknown (negative).
func setEpochs(o, epochs Offsets) {
	for t, ps := range epochs {
		for p, n := range ps {
			setEpoch(o, t, p, int32(n))
		}
	}
}

func setEpoch(o Offsets, topic string, partition, epoch int32) {
	if epoch < 0 {
		o.Delete(topic, partition)
	} else {
		o.Set(topic, partition, int64(epoch))
	}
}

// checkEpochs asks the leaders where the epoch of each restored position
// ends (see the top of this file) and returns the positions past it, to
// go on from there under on_position_lost: earliest (lostPosition.from).
// Epochs a leader does not know are forgotten, and positions go on
// unchecked.
func (s *Source) checkEpochs(ctx context.Context, restored *position) ([]lostPosition, error) {
	var req kadm.OffsetForLeaderEpochRequest
	for _, t := range s.cfg.Topics {
		for p, e := range restored.Epochs[t] {
			if _, ok := restored.Offsets.Lookup(t, p); ok && e >= 0 {
				req.Add(t, p, int32(e))
			}
		}
	}
	if len(req) == 0 {
		return nil, nil
	}
	ends, err := s.adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		return nil, classify("offsets for leader epochs", err)
	}
	var lost []lostPosition
	for t, ps := range req {
		for p, e := range ps {
			n, _ := restored.Offsets.Lookup(t, p)
			end, ok := ends[t][p]
			switch {
			case !ok:
				return nil, fmt.Errorf("%w: offsets for leader epochs: no answer for %s/%d", ErrUnreachable, t, p)
			case end.Err != nil:
				return nil, classify(fmt.Sprintf("offset for leader epoch %d of %s/%d", e, t, p), end.Err)
			case end.EndOffset < 0 || end.LeaderEpoch < 0:
				restored.Epochs.Delete(t, p)
				s.log.Warn().Str("topic", t).Int32("partition", p).Int32("epoch", e).Int64("offset", n).
					Msg("the partition's leader knows no end of the restored position's leader epoch; the position goes on unchecked")
			case end.EndOffset < n:
				lost = append(lost, lostPosition{topic: t, partition: p, from: end.EndOffset, epoch: end.LeaderEpoch,
					why: fmt.Sprintf("the log was truncated below offset %d: leader epoch %d, in which the records before it were read, ends at offset %d, so the records from %d to %d that were read are no longer in the log (an unclean leader election?)",
						n, e, end.EndOffset, end.EndOffset, n-1)})
			case end.LeaderEpoch < e:
				// The leader does not know epoch e, and its log reaches n
				// in an earlier one (e's batches compacted away before it
				// copied the log): the position holds, in the leader's
				// epoch, which the fetches then send (see diverged).
				restored.Epochs.Set(t, p, int64(end.LeaderEpoch))
			}
		}
	}
	return lost, nil
}
