package pipeline

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/sink"
)

// TestLastVisibleFindsTheNewestCheckpointWithOutput: the bisection over
// "is output after id visible" finds the newest id with output, from a
// start where some is known visible, and asks about 2 log2(newest) times.
func TestLastVisibleFindsTheNewestCheckpointWithOutput(t *testing.T) {
	for _, c := range []struct{ from, newest checkpoint.ID }{
		{0, 1}, {0, 2}, {0, 3}, {0, 1000}, {3, 4}, {3, 5}, {3, 9}, {7, 1 << 20}, {0, math.MaxUint64 - 1}, {0, math.MaxUint64},
	} {
		asked := 0
		got, err := lastVisible(c.from, func(id checkpoint.ID) (bool, error) {
			asked++
			return c.newest > id, nil
		})
		if err != nil || got != c.newest {
			t.Errorf("lastVisible(%d) with output up to %d = %d, %v", c.from, c.newest, got, err)
		}
		if asked > 2*64+2 {
			t.Errorf("lastVisible(%d) with output up to %d asked %d times", c.from, c.newest, asked)
		}
	}
	boom := errors.New("the sink cannot be listed")
	if _, err := lastVisible(0, func(checkpoint.ID) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("lastVisible with a failing audit = %v, want its error", err)
	}
}

// showingSink is a job sink whose audit shows output of checkpoints up to
// newest.
type showingSink struct {
	sink.Sink
	newest checkpoint.ID
}

func (s showingSink) CommittedAfter(_ context.Context, id checkpoint.ID) ([]string, error) {
	if s.newest > id {
		return []string{"output of a later checkpoint"}, nil
	}
	return nil, nil
}

// TestAFallBackStartNumbersItsCheckpointsAfterTheVisibleOutput: a start
// that goes on from a checkpoint older than the sink's visible output
// (on_unrestorable: fall_back) numbers its checkpoints after the newest
// visible one, whether the dir was reset (no checkpoint) or its newest
// checkpoints cannot be restored; not when nothing later is visible.
func TestAFallBackStartNumbersItsCheckpointsAfterTheVisibleOutput(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := jobConfig(t, b, topic, t.TempDir(), jobOpts{checkpoint: "timeout: 10s, on_unrestorable: fall_back"})
	a := &attempt{j: New(cfg, Options{})}
	defer a.close()

	r := &restoredJob{}
	if err := a.checkAhead(ctx, r, showingSink{newest: 37}); err != nil || r.after != 37 {
		t.Errorf("a reset dir, the sink shows checkpoint 37: checkAhead = %v, numbered after %d; want nil, after 37", err, r.after)
	}
	r = &restoredJob{md: &checkpoint.Metadata{ID: 3}, skipped: []store.Skipped{{ID: 5, Err: errors.New("a state file is missing")}}}
	if err := a.checkFallback(ctx, r, showingSink{newest: 9}); err != nil || r.after != 9 {
		t.Errorf("restoring 3 past unrestorable 5, the sink shows checkpoint 9: checkFallback = %v, numbered after %d; want nil, after 9", err, r.after)
	}
	r = &restoredJob{md: &checkpoint.Metadata{ID: 3}, skipped: []store.Skipped{{ID: 5, Err: errors.New("a state file is missing")}}}
	if err := a.checkFallback(ctx, r, showingSink{newest: 3}); err != nil || r.after != 0 {
		t.Errorf("restoring 3, the sink shows nothing later: checkFallback = %v, numbered after %d; want nil, no floor", err, r.after)
	}
}
