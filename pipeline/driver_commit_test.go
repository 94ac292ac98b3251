package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/syncbuf"
	"github.com/connector-dev/connector/sink"
)

// stuckSink's Commit returns only when its context ends, as a client that
// retries a broker's answer forever does (franz-go's EndTransaction on
// CONCURRENT_TRANSACTIONS), and records why it returned.
type stuckSink struct {
	sink.Sink
	commits int
	ended   error
}

func (s *stuckSink) Commit(ctx context.Context, _ []sink.Committable) error {
	s.commits++
	<-ctx.Done()
	s.ended = ctx.Err()
	return ctx.Err()
}

// TestAStuckSinkCommitFailsTheJobAfterTheCommitTimeout: a completed
// checkpoint whose sink commit does not return fails the job (whose restart
// commits again) once commitTimeout passed, instead of holding the driver,
// and every later checkpoint, without a word.
func TestAStuckSinkCommitFailsTheJobAfterTheCommitTimeout(t *testing.T) {
	s := &stuckSink{}
	d := &driver{
		sink: s, log: zerolog.Nop(), commitTimeout: 50 * time.Millisecond,
		persisted: map[checkpoint.ID]persisted{7: {md: checkpoint.Metadata{ID: 7}}},
	}
	t0 := time.Now()
	d.complete(context.Background(), checkpoint.NotifyComplete{ID: 7})
	took := time.Since(t0)
	if s.commits != 1 || !errors.Is(s.ended, context.DeadlineExceeded) {
		t.Fatalf("the sink's Commit ran %d times and ended with %v; want once, ended by its deadline", s.commits, s.ended)
	}
	if d.failed == nil || !errors.Is(d.failed, context.DeadlineExceeded) ||
		!strings.Contains(d.failed.Error(), "sink commit of checkpoint 7: did not finish within 50ms") {
		t.Fatalf("the job's failure: %v; want the commit of checkpoint 7 named, and its 50ms bound", d.failed)
	}
	if took < 50*time.Millisecond {
		t.Fatalf("complete returned after %v, before the commit's bound", took)
	}
}

// TestACommitEndedByTheJobIsNotCalledATimeout: when the job itself stops
// (its context ends) during a commit, the failure is the job's context
// error, not a commit that took too long.
func TestACommitEndedByTheJobIsNotCalledATimeout(t *testing.T) {
	s := &stuckSink{}
	d := &driver{sink: s, log: zerolog.Nop(), commitTimeout: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := d.commit(ctx, 0, nil)
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("commit: %v; want the job's own context error, unannotated", err)
	}
}

func TestCommitBoundIsCheckpointTimeoutAndAtLeastThirtySeconds(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{5 * time.Second, 30 * time.Second},
		{30 * time.Second, 30 * time.Second},
		{10 * time.Minute, 10 * time.Minute},
	} {
		if got := commitBound(c.timeout); got != c.want {
			t.Errorf("commitBound(%v) = %v, want %v", c.timeout, got, c.want)
		}
	}
}

// waitingSink's Commit returns once the job's log says the commit is still
// waiting (or after 30 s, with an error saying it never did).
type waitingSink struct {
	sink.Sink
	log *syncbuf.Buffer
}

func (s *waitingSink) Commit(ctx context.Context, _ []sink.Committable) error {
	deadline := time.Now().Add(30 * time.Second)
	for s.log.Count("sink commit: still waiting") == 0 {
		if time.Now().After(deadline) {
			return errors.New("no warning within 30s")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// TestACommitThatRunsLongSaysSo: while a sink's commit runs past the
// warning period, the log says which checkpoint's commit is still waiting,
// and how long its bound is; once it returns, the warnings stop.
func TestACommitThatRunsLongSaysSo(t *testing.T) {
	var logs syncbuf.Buffer
	d := &driver{
		sink: &waitingSink{log: &logs}, log: zerolog.New(&logs), commitTimeout: time.Hour, slowWarning: 5 * time.Millisecond,
	}
	if err := d.commit(context.Background(), 7, nil); err != nil {
		t.Fatalf("commit: %v", err)
	}
	line := strings.SplitN(logs.String(), "\n", 2)[0]
	for _, want := range []string{`"level":"warn"`, `"checkpoint":7`, `"bound_ms":3600000`, `"waiting_ms":`, `"message":"sink commit: still waiting"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the warning %s lacks %s", line, want)
		}
	}
	n := logs.Count("still waiting")
	time.Sleep(20 * time.Millisecond) // four warning periods: none may come once commit returned
	if m := logs.Count("still waiting"); m != n {
		t.Fatalf("%d warnings after the commit returned", m-n)
	}
}
