package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/record"
	"github.com/connector-dev/connector/sink"
)

// reviewQuietSink is a job sink whose audit shows no output after any
// checkpoint (the checkpoints since held bad records only).
type reviewQuietSink struct{ sink.Sink }

func (reviewQuietSink) CommittedAfter(context.Context, checkpoint.ID) ([]string, error) {
	return nil, nil
}

// TestReviewDiffFallbackAuditsTheDeadLetters: the start refuses (under
// checkpoint.on_unrestorable: fail) to restore a checkpoint older than
// output already visible, asking the sink's audit. With exactly_once dead
// letters, a later checkpoint's dead letters are output too: here
// checkpoint 5 committed a dead letter (its progress marker says so),
// checkpoint 5 cannot be restored, and the job's sink shows nothing after
// 3. Restoring 3 reads the bad record again and dead-letters it a second
// time, yet the start takes it as safe: the dead-letter sink is never
// audited.
func TestReviewDiffFallbackAuditsTheDeadLetters(t *testing.T) {
	b := kafkatest.Fake(t)
	topic := kafkatest.Topic(t, b, 1)
	dlq := kafkatest.Topic(t, b, 1)
	cfg := jobConfig(t, b, topic, t.TempDir(), jobOpts{
		checkpoint: "timeout: 10s, mode: exactly_once",
		pipeline:   fmt.Sprintf("on_decode_error: {policy: dead_letter, topic: %s}", dlq),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Checkpoint 5's dead letter, committed as the driver commits it.
	dls, err := DeadLetterSink(cfg, sink.Env{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer dls.Close()
	if err := dls.Recover(ctx, nil); err != nil {
		t.Fatal(err)
	}
	w, err := dls.NewWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, &record.Record{Topic: dlq, Key: []byte("k"), Value: []byte("not json")}); err != nil {
		t.Fatal(err)
	}
	cs, err := w.PreCommit(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := dls.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	w.Committed(5)
	_ = w.Close()
	if visible, err := dls.CommittedAfter(ctx, 3); err != nil || len(visible) == 0 {
		t.Fatalf("precondition: the dead-letter topic's audit after checkpoint 3 = %v, %v; want checkpoint 5's dead letter", visible, err)
	}

	a := &attempt{j: New(cfg, Options{})}
	defer a.close()
	r := &restoredJob{md: &checkpoint.Metadata{ID: 3}, skipped: []store.Skipped{{ID: 5, Err: errors.New("a state file is missing")}}}
	if err := a.checkFallback(ctx, r, reviewQuietSink{}); err == nil {
		t.Errorf("checkpoint 5 unrestorable, its dead letter committed, checkpoint.on_unrestorable: %s: the start restores checkpoint 3 and dead-letters its bad records again (checkFallback = nil)", cfg.Checkpoint.OnUnrestorable)
	}
	r = &restoredJob{} // the checkpoint dir reset: no checkpoint at all
	if err := a.checkAhead(ctx, r, reviewQuietSink{}); err == nil {
		t.Errorf("no checkpoint on disk, the dead-letter topic holds checkpoint 5's committed dead letter: the start reads the bad records again (checkAhead = nil)")
	}
}
