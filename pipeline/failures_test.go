package pipeline

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkatest"
)

// faultyFS is the OS filesystem with a switch: while on, fault is applied
// to every operation under dir.
func faultyFS(dir string, on *atomic.Bool, fault func(errorfs.Op) error) vfs.FS {
	return errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !on.Load() || !strings.HasPrefix(op.Path, dir) {
			return nil
		}
		return fault(op)
	}))
}

// waitUntil polls cond for up to 60s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 60s waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailedCheckpointsDoNotStopTheJob: while checkpoints fail (the disk
// is full, or a checkpoint times out), the job keeps running without a
// restart; once the fault clears, the next checkpoint completes and the
// records written before the failed barriers appear exactly once. (A
// failed fsync of the sink's output restarts the job instead:
// TestAFailedFsyncOfTheOutputRestartsTheJobAndLosesNothing.)
func TestFailedCheckpointsDoNotStopTheJob(t *testing.T) {
	faults := map[string]struct {
		checkpoint string
		fault      func(errorfs.Op) error
	}{
		"disk full": {fault: func(op errorfs.Op) error {
			switch op.Kind {
			case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpRename, errorfs.OpLink:
				return fmt.Errorf("injected: %w", syscall.ENOSPC)
			}
			return nil
		}},
		// An fsync three times the timeout makes every checkpoint that
		// syncs a file time out; without the fault a checkpoint takes some
		// 10 ms, far within the timeout even on a loaded machine.
		"timeout": {checkpoint: "timeout: 1s", fault: func(op errorfs.Op) error {
			if op.Kind == errorfs.OpFileSync {
				time.Sleep(3 * time.Second)
			}
			return nil
		}},
	}
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			b := kafkatest.Cluster(t)
			topic := kafkatest.Topic(t, b, 2)
			dir := t.TempDir()
			cp := "tolerable_failures: 1000"
			if f.checkpoint != "" {
				cp += ", " + f.checkpoint
			} else {
				cp += ", timeout: 10s"
			}
			cfg := jobConfig(t, b, topic, dir, jobOpts{parallelism: 2, checkpoint: cp})
			var on atomic.Bool
			r := startWith(t, cfg, Options{FS: faultyFS(dir, &on, f.fault)})
			produceIDs(t, b, topic, 0, 1000)
			waitAll(t, outDir(cfg), 1000)

			on.Store(true)
			produceIDs(t, b, topic, 1000, 2000)
			failedBefore := r.counter("connector_checkpoints_failed_total")
			waitUntil(t, "two failed checkpoints", func() bool {
				return r.counter("connector_checkpoints_failed_total") >= failedBefore+2
			})
			on.Store(false)
			waitAll(t, outDir(cfg), 2000)
			if n := r.counter("connector_job_restarts_total"); n != 0 {
				t.Errorf("the job restarted %d times; failed checkpoints must not restart it", n)
			}
			r.stop(t)
			checkOnce(t, visibleIDs(t, outDir(cfg)), 2000)
		})
	}
}

// TestAFailedFsyncOfTheOutputRestartsTheJobAndLosesNothing: the file
// sink's fsync fails (EIO). After a write-back error the kernel may drop
// the written pages and a later fsync succeed, so the sink says its output
// in flight is lost (sink.ErrLost): the job restarts from its last
// checkpoint instead of trusting the next fsync, and once the fault clears
// every record is visible exactly once.
func TestAFailedFsyncOfTheOutputRestartsTheJobAndLosesNothing(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{parallelism: 2, checkpoint: "tolerable_failures: 1000, timeout: 10s"})
	restartsAndLosesNothing(t, b, topic, cfg, outDir(cfg), "a restart", func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileSync {
			return fmt.Errorf("injected fsync failure: %w", syscall.EIO)
		}
		return nil
	})
}

// restartsAndLosesNothing runs cfg with fault injected under dir from the
// 1000th record on, until the job restarted (what), then without it:
// every one of 2000 records is visible once.
func restartsAndLosesNothing(t *testing.T, b kafkatest.Brokers, topic string, cfg *config.Job, dir, what string, fault func(errorfs.Op) error) {
	t.Helper()
	var on atomic.Bool
	r := startWith(t, cfg, Options{FS: faultyFS(dir, &on, fault)})
	produceIDs(t, b, topic, 0, 1000)
	waitAll(t, outDir(cfg), 1000)
	on.Store(true)
	produceIDs(t, b, topic, 1000, 2000)
	waitUntil(t, what, func() bool { return r.counter("connector_job_restarts_total") >= 1 })
	on.Store(false)
	waitAll(t, outDir(cfg), 2000)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), 2000)
}

// TestUnreachableBrokerKeepsRetryingAndIsNotReady: with no broker to talk
// to, the job retries with backoff, reports not ready, and stops cleanly.
func TestUnreachableBrokerKeepsRetryingAndIsNotReady(t *testing.T) {
	dir := t.TempDir()
	cfg := jobConfig(t, kafkatest.Brokers{Addrs: []string{"127.0.0.1:1"}}, "orders", dir, jobOpts{})
	r := start(t, cfg)
	waitUntil(t, "three logged retries", func() bool { return r.logs.Count("failed; retrying") >= 3 })
	if r.job.Ready() == nil {
		t.Fatal("job is ready without a broker")
	}
	select {
	case err := <-r.done:
		t.Fatalf("job gave up on an unreachable broker: %v", err)
	default:
	}
	r.stop(t)
}

// checkGroupAtEnd: the group's committed offsets equal the end of every
// partition (the job drained the topic and committed its last checkpoint).
func checkGroupAtEnd(t *testing.T, b kafkatest.Brokers, topic, group string) {
	t.Helper()
	adm := kafkatest.Admin(t, b)
	ctx := context.Background()
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, e.Partition)
		if !ok || c.At != e.Offset {
			t.Errorf("partition %d: committed %+v, end %d", e.Partition, c.At, e.Offset)
		}
	})
}

// TestFailedSinkCommitRestartsTheJobAndLosesNothing: a commit that fails
// after its checkpoint completed fails the job (it must not be skipped); the
// restart commits the checkpoint again and every record appears once.
func TestFailedSinkCommitRestartsTheJobAndLosesNothing(t *testing.T) {
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	dir := t.TempDir()
	cfg := jobConfig(t, b, topic, dir, jobOpts{parallelism: 2})
	cfg.Restart.MaxFailures = 1000
	restartsAndLosesNothing(t, b, topic, cfg, dir, "a restart after the failed commit", func(op errorfs.Op) error {
		if op.Kind == errorfs.OpRename && strings.Contains(op.Path, "/.inprogress.") {
			return fmt.Errorf("injected rename failure: %w", syscall.EIO)
		}
		return nil
	})
}
