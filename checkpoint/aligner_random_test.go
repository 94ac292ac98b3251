package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAlignerRandomSchedulesKeepRecordsInOrderAndSnapshotsConsistent feeds
// Aligners random channel streams (records; barriers, some skipped, repeated or
// followed by a stale one; cancellation markers; ends) in random interleavings,
// with random out-of-band aborts, sometimes reading blocked channels and
// sometimes not, with and without a held-bytes limit, and checks after every
// output:
//
//   - per channel, records are processed in the order they were read, each
//     once; at the end every record was processed, nothing is held or blocked,
//     and InputEnded came exactly once;
//   - exactly-once: at SnapshotAndForward(n), the records processed are
//     exactly those before barrier n on every channel that has one (all
//     records of a channel without it, which must have ended): nothing after
//     barrier n was processed before the snapshot, nothing before it after;
//   - at-least-once: at SnapshotAndForward(n) every record before barrier n was
//     processed;
//   - every checkpoint ends (snapshot or cancel) at most once, in increasing id
//     order, and held bytes never exceed the limit.
func TestAlignerRandomSchedulesKeepRecordsInOrderAndSnapshotsConsistent(t *testing.T) {
	base := baseSeed(t)
	n := *schedulesFlag
	for i := range n {
		seed := base + uint64(i)
		if err := runAlignerSchedule(seed); err != nil {
			t.Fatalf("schedule seed %d: %v\nreplay: go test ./checkpoint/ -run %s -seed %d -schedules 1", seed, err, t.Name(), seed)
		}
	}
	t.Logf("%d schedules", n)
}

type testRec struct {
	ch, seq int // seq counts records on the channel from 1
}

func runAlignerSchedule(seed uint64) error {
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	s := AlignerSettings{Channels: 1 + r.IntN(4)}
	if r.IntN(3) == 0 {
		s.Mode = AtLeastOnce
	}
	if r.IntN(4) == 0 {
		s.MaxHeldBytes = int64(1 + r.IntN(12))
	}
	respectBlocked := r.IntN(3) == 0
	a, err := NewAligner[testRec](s)
	if err != nil {
		return err
	}

	// Streams, and per channel: records before its first barrier n, and total.
	k := 1 + r.IntN(6)
	streams := make([][]Element[testRec], s.Channels)
	pre := make([]map[ID]int, s.Channels)
	total := make([]int, s.Channels)
	for ch := range streams {
		pre[ch] = map[ID]int{}
		seq := 0
		recs := func(n int) {
			for range n {
				seq++
				streams[ch] = append(streams[ch], Element[testRec]{Kind: RecordElement,
					Record: testRec{ch, seq}, Size: int64(1 + r.IntN(4))})
			}
		}
		barrier := func(id ID) {
			if _, ok := pre[ch][id]; !ok {
				pre[ch][id] = seq
			}
			streams[ch] = append(streams[ch], Element[testRec]{Kind: BarrierElement, Barrier: Barrier{ID: id}})
		}
		for i := 1; i <= k; i++ {
			id := ID(i)
			recs(r.IntN(4))
			switch x := r.IntN(20); {
			case x < 14:
				barrier(id)
			case x < 16:
				streams[ch] = append(streams[ch], Element[testRec]{Kind: CancelElement, Cancel: CancelMarker{ID: id}})
			case x < 18:
				// skipped
			case x < 19:
				barrier(id)
				recs(r.IntN(2))
				barrier(id)
			default:
				barrier(id)
				recs(r.IntN(2))
				if i > 1 {
					barrier(id - 1)
				}
			}
		}
		recs(r.IntN(4))
		total[ch] = seq
		streams[ch] = append(streams[ch], Element[testRec]{Kind: EndOfChannel})
	}

	delivered := make([]int, s.Channels)
	var lastEnded ID
	inputEnded := 0
	now := t0
	check := func(outs []Output[testRec]) error {
		for _, o := range outs {
			switch o.Kind {
			case ProcessRecord:
				if o.Record.ch != o.Channel || o.Record.seq != delivered[o.Channel]+1 {
					return fmt.Errorf("processed %+v from channel %d after record %d", o.Record, o.Channel, delivered[o.Channel])
				}
				delivered[o.Channel]++
			case SnapshotAndForward, CancelAndForward:
				id := o.Barrier.ID
				if id <= lastEnded {
					return fmt.Errorf("%v of %d after %d ended", o.Kind, id, lastEnded)
				}
				lastEnded = id
				if o.Kind == CancelAndForward {
					continue
				}
				for ch := range s.Channels {
					p, has := pre[ch][id]
					switch {
					case !has && delivered[ch] != total[ch]:
						return fmt.Errorf("snapshot %d: channel %d has no barrier %d and processed %d of %d records", id, ch, id, delivered[ch], total[ch])
					case has && s.Mode == ExactlyOnce && delivered[ch] != p:
						return fmt.Errorf("snapshot %d: channel %d processed %d records, %d are before the barrier", id, ch, delivered[ch], p)
					case has && delivered[ch] < p:
						return fmt.Errorf("snapshot %d: channel %d processed %d records, %d are before the barrier", id, ch, delivered[ch], p)
					}
				}
			case InputEnded:
				inputEnded++
			default:
				return fmt.Errorf("unknown output kind %d", o.Kind)
			}
		}
		if _, b := a.Held(); s.MaxHeldBytes > 0 && b > s.MaxHeldBytes {
			return fmt.Errorf("%d bytes held, max %d", b, s.MaxHeldBytes)
		}
		return nil
	}

	next := make([]int, s.Channels)
	for step := 0; ; step++ {
		var open, unblocked []int
		for ch := range s.Channels {
			if next[ch] < len(streams[ch]) {
				open = append(open, ch)
				if !a.Blocked(ch) {
					unblocked = append(unblocked, ch)
				}
			}
		}
		if len(open) == 0 {
			break
		}
		now = now.Add(time.Duration(r.IntN(3)) * time.Millisecond)
		if r.IntN(30) == 0 {
			if err := check(a.Abort(now, ID(1+r.IntN(k)))); err != nil {
				return fmt.Errorf("step %d, abort: %w", step, err)
			}
			continue
		}
		from := open
		if respectBlocked && len(unblocked) > 0 {
			from = unblocked
		}
		ch := from[r.IntN(len(from))]
		el := streams[ch][next[ch]]
		next[ch]++
		outs, err := a.Process(now, ch, el)
		if err != nil {
			return fmt.Errorf("step %d: %v", step, err)
		}
		if err := check(outs); err != nil {
			return fmt.Errorf("step %d, channel %d %v: %w", step, ch, el.Kind, err)
		}
	}
	for ch := range s.Channels {
		if delivered[ch] != total[ch] {
			return fmt.Errorf("channel %d: %d of %d records processed", ch, delivered[ch], total[ch])
		}
		if a.Blocked(ch) {
			return fmt.Errorf("channel %d blocked at the end", ch)
		}
	}
	if held, _ := a.Held(); held != 0 || inputEnded != 1 || len(a.Aligning()) != 0 {
		return fmt.Errorf("at the end: %d held, input ended %d times, aligning %v", held, inputEnded, a.Aligning())
	}
	return nil
}
