package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/sink/file"
)

// produceMixed produces records from to to of topic: every fifth one not
// JSON (a bad record: "not json <i>"), the others {"id":<i>}. It returns
// the bad records' values and the good records' ids.
func produceMixed(t *testing.T, b kafkatest.Brokers, topic string, from, to int) (bad []string, good []int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		if i%5 == 0 {
			v := fmt.Sprintf("not json %d", i)
			bad = append(bad, v)
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)})
			continue
		}
		good = append(good, i)
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id":%d}`, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return bad, good
}

// visibleDeadLetters reads topic as a read_committed consumer sees it now:
// every partition up to its last stable offset as the brokers give it at
// the call (so "none visible" is decided by the offsets, not by how long a
// poll waited). It returns how often each value is there.
func visibleDeadLetters(t *testing.T, b kafkatest.Brokers, topic string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lso, err := kafkatest.Admin(t, b).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, err)
	}
	// Control records (transaction markers) are kept for their offsets
	// only: the last record below a last stable offset may be one.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	behind := func() bool {
		for p, o := range lso[topic] {
			if next[p] < o.Offset {
				return true
			}
		}
		return false
	}
	out := map[string]int{}
	for behind() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read_committed read of %s: not at its last stable offsets %v within a minute (at %v)", topic, lso, next)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= lso[topic][r.Partition].Offset {
				return // committed after the offsets were listed: not counted
			}
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			if !r.Attrs.IsControl() {
				out[string(r.Value)]++
			}
		})
	}
	return out
}

// checkDeadLettersOnce fails unless got holds every value of want once
// and nothing else.
func checkDeadLettersOnce(t *testing.T, got map[string]int, want []string) {
	t.Helper()
	var wrong []string
	for _, v := range want {
		if got[v] != 1 {
			wrong = append(wrong, fmt.Sprintf("%q %d times", v, got[v]))
		}
	}
	for v := range got {
		if !slices.Contains(want, v) {
			wrong = append(wrong, fmt.Sprintf("%q, which is no bad record", v))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Fatalf("dead-letter topic (read_committed): want each of %d bad records once; %d wrong: %s", len(want), len(wrong), strings.Join(wrong[:min(len(wrong), 10)], "; "))
	}
}

// Faults of TestDeadLettersBecomeVisibleOnceWithTheirCheckpointAcrossAKilledCommit.
const (
	noFault          = iota
	persistFails     // no checkpoint's metadata can be written: none completes
	sinkCommitFails  // the file sink's commit (its renames into place) fails
	deadLetterFaults // how many
)

// TestDeadLettersBecomeVisibleOnceWithTheirCheckpointAcrossAKilledCommit:
// with on_decode_error: dead_letter in exactly_once mode, a dead letter is
// visible (read_committed) only once the checkpoint covering its record
// completed, and exactly once although the attempt that completed that
// checkpoint died between its pre-commit and its commit:
//
//  1. while no checkpoint can complete (its metadata cannot be written),
//     bad records interleaved with good ones are dead-lettered and
//     pre-committed at several barriers, and none is visible;
//  2. then checkpoints complete, but the sink's commit fails: the attempt
//     dies after the checkpoint naming the dead-letter transactions is
//     durable and before they are committed (its writers abort them), and
//     the restarts die the same way in their recovery: none is visible;
//  3. once the commit works, the restart commits the checkpoint's dead
//     letters again (from the log): each is visible once, and so are those
//     of more records after it.
func TestDeadLettersBecomeVisibleOnceWithTheirCheckpointAcrossAKilledCommit(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dlq := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{
		parallelism: 2,
		transforms:  "{type: filter, condition: {field: id, op: exists}}",
		checkpoint:  "timeout: 10s, tolerable_failures: 100",
		pipeline:    fmt.Sprintf("on_decode_error: {policy: dead_letter, topic: %s}", dlq),
	})
	cfg.Name = fmt.Sprintf("dlq-eo-%d", time.Now().UnixNano()) // its own transactional ids on a shared broker
	cfg.Restart.MaxFailures = 1000
	cfg.Sink.Config.(*file.Config).RollOnCheckpoint = true // every checkpoint's commit has files to rename
	var fault atomic.Int32
	chk := filepath.Join(dir, "chk")
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch fault.Load() {
		case persistFails:
			if strings.HasPrefix(op.Path, chk) {
				switch op.Kind {
				case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpRename, errorfs.OpLink:
					return fmt.Errorf("injected: %w", syscall.ENOSPC)
				}
			}
		case sinkCommitFails:
			if op.Kind == errorfs.OpRename && strings.Contains(op.Path, "/.inprogress.") {
				return fmt.Errorf("injected rename failure: %w", syscall.EIO)
			}
		}
		return nil
	}))
	r := startWith(t, cfg, Options{FS: fs})
	waitUntil(t, "a first checkpoint", func() bool { return r.counter("connector_checkpoints_completed_total") >= 1 })

	// 1. No checkpoint completes: nothing is visible.
	fault.Store(persistFails)
	failed := r.counter("connector_checkpoints_failed_total")
	waitUntil(t, "a failed checkpoint", func() bool { return r.counter("connector_checkpoints_failed_total") > failed })
	completed := r.counter("connector_checkpoints_completed_total")
	bad1, good1 := produceMixed(t, b, topic, 0, 500)
	waitUntil(t, "every record of the first batch processed", func() bool {
		return r.counter("connector_records_dead_lettered_total") >= uint64(len(bad1)) && r.counter("connector_records_out_total") >= uint64(len(good1))
	})
	failed = r.counter("connector_checkpoints_failed_total")
	waitUntil(t, "two more failed checkpoints (their barriers pre-committed the dead letters)", func() bool {
		return r.counter("connector_checkpoints_failed_total") >= failed+2
	})
	if n := r.counter("connector_checkpoints_completed_total"); n != completed {
		t.Fatalf("%d checkpoints completed while none could be persisted", n-completed)
	}
	if got := visibleDeadLetters(t, b, dlq); len(got) > 0 {
		t.Fatalf("%d dead letters visible while no checkpoint covering their records completed", len(got))
	}

	// 2. A checkpoint completes; its commit, and every restart's, dies
	// before the dead letters are committed.
	fault.Store(sinkCommitFails)
	waitUntil(t, "a restart after a failed commit", func() bool { return r.counter("connector_job_restarts_total") >= 1 })
	if got := visibleDeadLetters(t, b, dlq); len(got) > 0 {
		t.Fatalf("%d dead letters visible although the sink's commit of their checkpoint failed (it comes first)", len(got))
	}

	// 3. The restart commits them once; more records after it.
	fault.Store(noFault)
	waitAll(t, outDir(cfg), len(good1))
	bad2, good2 := produceMixed(t, b, topic, 500, 1000)
	waitAll(t, outDir(cfg), len(good1)+len(good2))
	r.stop(t)
	checkDeadLettersOnce(t, visibleDeadLetters(t, b, dlq), append(bad1, bad2...))
	ids := visibleIDs(t, outDir(cfg))
	for _, id := range append(good1, good2...) {
		if ids[id] != 1 {
			t.Errorf("good record %d is in the output %d times", id, ids[id])
		}
	}
	if len(ids) != len(good1)+len(good2) {
		t.Errorf("the output holds %d ids, want %d", len(ids), len(good1)+len(good2))
	}
}

// TestAtLeastOnceDeadLettersUseTheIdempotentProducer: in at_least_once
// mode dead letters keep going through the shared idempotent producer,
// visible at once (no transaction, no dead-letter sink); in exactly_once
// mode through each worker's transactional writer, never that producer.
func TestAtLeastOnceDeadLettersUseTheIdempotentProducer(t *testing.T) {
	for _, mode := range []string{"at_least_once", "exactly_once"} {
		t.Run(mode, func(t *testing.T) {
			b := kafkatest.Fake(t)
			topic := kafkatest.Topic(t, b, 1)
			dlq := kafkatest.Topic(t, b, 1)
			cfg := jobConfig(t, b, topic, t.TempDir(), jobOpts{
				checkpoint: "timeout: 10s, mode: " + mode,
				pipeline:   fmt.Sprintf("on_decode_error: {policy: dead_letter, topic: %s}", dlq),
			})
			a := &attempt{j: New(cfg, Options{})}
			defer a.close()
			r := &restoredJob{}
			dls, err := a.openDeadLetterSink(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.openDeadLetter(context.Background(), r, dls); err != nil {
				t.Fatal(err)
			}
			eo := mode == "exactly_once"
			if got := r.bad.dlq != nil; got == eo {
				t.Errorf("idempotent producer made: %v, want %v", got, !eo)
			}
			if got := r.deadLetterSink != nil; got != eo {
				t.Errorf("transactional dead-letter sink made: %v, want %v", got, eo)
			}
			if r.bad.limit <= 0 {
				t.Errorf("dead-letter limit %d", r.bad.limit)
			}
			if eo {
				return
			}
			if cl := r.bad.dlq; cl.OptValue(kgo.TransactionalID) != "" || cl.OptValue(kgo.DisableIdempotentWrite) == true {
				t.Errorf("the at_least_once producer is transactional (%v) or not idempotent (%v)", cl.OptValue(kgo.TransactionalID), cl.OptValue(kgo.DisableIdempotentWrite))
			}
		})
	}
}

// TestACheckpointWithoutDeadLetterCommittablesRestores: a worker snapshot
// of a version before exactly-once dead letters (no
// dead_letter_committables) restores with none, its sink committables
// unchanged; one with them gives them to the dead-letter sink only, never
// to the job's sink.
func TestACheckpointWithoutDeadLetterCommittablesRestores(t *testing.T) {
	sinkC := `{"checkpoint":3,"writer":0,"data":{"files":["a"]}}`
	dlqC := `{"checkpoint":3,"writer":0,"data":{"txn":"job:dlq-w0-t0"}}`
	for _, tc := range []struct {
		name, data string
		dead       int
	}{
		{"before", `{"committables":[` + sinkC + `]}`, 0},
		{"with", `{"committables":[` + sinkC + `],"dead_letter_committables":[` + dlqC + `]}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := &checkpoint.Metadata{ID: 3, Tasks: map[checkpoint.TaskID]checkpoint.Snapshot{
				task{sourceTask, 0}.ID(): {Data: []byte(`{}`)},
				task{workerTask, 0}.ID(): {Data: []byte(tc.data)},
			}}
			r, err := fromMetadata(md)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.committables) != 1 || len(r.deadLetters) != tc.dead {
				t.Fatalf("restored %d sink and %d dead-letter committables, want 1 and %d", len(r.committables), len(r.deadLetters), tc.dead)
			}
			if cs, _ := Committables(md); len(cs) != 1 {
				t.Errorf("Committables (the sink's, for tools) = %d, want 1", len(cs))
			}
		})
	}
}
