package pipeline

// Review tests: Pebble's fatal errors on a real full disk. Pebble treats a
// failed write of its MANIFEST as fatal (Logger.Fatalf, which the state
// package's logger turns into a panic): these run the job in a child
// process so that a panic fails one test instead of the whole binary.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/connector-dev/connector/internal/kafkatest"
)

const reviewChildEnv = "REVIEW_DISK_CHILD"

// inReviewChild reports whether this is the child process; in the
// parent it runs t (a test or subtest) in a child and returns false.
func inReviewChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(reviewChildEnv) != "" {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	runReviewChild(t, strings.Join(parts, "/"))
	return false
}

// runReviewChild runs the test name in a child process with
// REVIEW_DISK_CHILD set, and fails if the child panicked or failed.
func runReviewChild(t *testing.T, name string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("mounting a filesystem needs root: run the tests as root (scripts/test)")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+name, "-test.v", "-test.count=1", "-test.timeout=5m")
	mounts := filepath.Join(t.TempDir(), "mounts")
	cmd.Env = append(os.Environ(), reviewChildEnv+"=1", reviewMountsEnv+"="+mounts)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if list, rerr := os.ReadFile(mounts); rerr == nil {
		for _, dir := range strings.Fields(string(list)) {
			unmountReview(t, dir)
		}
	}
	if p := regexp.MustCompile(`(?m)^panic: .*$`).Find(out.Bytes()); p != nil {
		t.Fatalf("the connector panicked (in the child process running %s; %v): %s", name, err, p)
	}
	if err != nil {
		tail := out.Bytes()
		if len(tail) > 6000 {
			tail = tail[len(tail)-6000:]
		}
		t.Fatalf("child %s failed: %v\n%s", name, err, tail)
	}
}

// TestReviewDiskFreshStatefulJobOnAFullDisk (FAILS: defect): a new job
// with keyed state (dedup) starts with state.dir on a full tmpfs
// (checkpoints and output on another disk). Opening Pebble writes its
// first MANIFEST, which fails with ENOSPC; Pebble calls Logger.Fatalf
// (version_set.go:191), state's logger panics (state/logger.go:37) and
// pipeline/restore.go:100 re-panics: the process dies (the binary: exit 3,
// "internal error (a bug; please report it)"), where the contract wants a
// failed attempt, retried, that recovers once the disk has room. Wanted
// here: no panic, no exit while full; freed, every record arrives once.
func TestReviewDiskFreshStatefulJobOnAFullDisk(t *testing.T) {
	if !inReviewChild(t) {
		return
	}
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	tmp := reviewTmpfs(t, 64)
	cfg := jobConfig(t, b, topic, tmp, jobOpts{parallelism: 2, transforms: "{type: dedup, key: id, ttl: 1h}", checkpoint: "tolerable_failures: 1000, timeout: 10s"})
	diskLayout(t, cfg, tmp, false, true, false)
	cfg.Restart.MaxFailures = 1000
	f := fillDisk(t, tmp)
	produceIDs(t, b, topic, 0, 1000)
	r := start(t, cfg)
	waitUntil(t, "two failed checkpoints or restarts on the full disk", func() bool {
		return r.counter("connector_checkpoints_failed_total")+r.counter("connector_job_restarts_total") >= 2
	})
	notExited(t, r, "started on a full disk")
	f.free(t)
	waitAll(t, outDir(cfg), 1000)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), 1000)
}

// TestReviewDiskNearlyFullWhileRunning (passes): state.dir on a disk that is
// nearly full while the job runs: another process takes every free page
// again within 5 ms, and gives a page back now and then (a disk at 100%
// with some churn). Pebble's flushes get their table written now and then
// and its MANIFEST edit fails, or the other way round. Wanted: checkpoints
// fail, the job goes on without a panic; once the disk has room, every
// record arrives once.
func TestReviewDiskNearlyFullWhileRunning(t *testing.T) {
	if !inReviewChild(t) {
		return
	}
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	tmp := reviewTmpfs(t, 64)
	cfg := jobConfig(t, b, topic, tmp, jobOpts{parallelism: 2, transforms: "{type: dedup, key: id, ttl: 1h}", checkpoint: "tolerable_failures: 100000, timeout: 10s"})
	diskLayout(t, cfg, tmp, true, true, false)
	cfg.Restart.MaxFailures = 100000
	r := start(t, cfg)
	produceIDs(t, b, topic, 0, 1000)
	waitAll(t, outDir(cfg), 1000)
	f := fillDisk(t, tmp)
	n := 1000
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		f.giveBack(t, 1+n/1000%8) // some pages back, taken again within 5 ms if the job does not
		produceIDs(t, b, topic, n, n+1000)
		n += 1000
		notExited(t, r, "nearly full")
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("while nearly full: %d records, restarts=%d failed=%d completed=%d", n, r.counter("connector_job_restarts_total"),
		r.counter("connector_checkpoints_failed_total"), r.counter("connector_checkpoints_completed_total"))
	f.free(t)
	waitAll(t, outDir(cfg), n)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), n)
}

// TestReviewDiskRestartAfterTolerableFailuresOnAFullDisk (FAILS: the same
// defect as TestReviewDiskFreshStatefulJobOnAFullDisk, reached the
// documented way, by checkpoint.tolerable_failures): the disk under
// state.dir stays full past checkpoint.tolerable_failures, so the job
// restarts from its last checkpoint, as documented, with the disk still
// full (another process takes any page freed within 5 ms). Its state (a
// dedup) is restored into a new Pebble database, whose MANIFEST cannot
// be written. (The test keeps hard links to the working copy's files, so
// that the restart's removal of it frees no page: the other process took
// them.) Wanted: the restart fails and is retried (max_failures is
// high), no panic; once the disk has room, every record arrives once.
func TestReviewDiskRestartAfterTolerableFailuresOnAFullDisk(t *testing.T) {
	if !inReviewChild(t) {
		return
	}
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	tmp := reviewTmpfs(t, 64)
	cfg := jobConfig(t, b, topic, tmp, jobOpts{parallelism: 2, transforms: "{type: dedup, key: id, ttl: 1h}", checkpoint: "tolerable_failures: 2, timeout: 10s"})
	diskLayout(t, cfg, tmp, true, true, false)
	cfg.Restart.MaxFailures = 1000
	r := start(t, cfg)
	produceIDs(t, b, topic, 0, 1000)
	waitAll(t, outDir(cfg), 1000)
	f := fillDisk(t, tmp)
	f.pin(t, filepath.Join(cfg.State.Dir, "work"))
	produceIDs(t, b, topic, 1000, 2000)
	waitUntil(t, "two restarts on the full disk", func() bool {
		return r.counter("connector_job_restarts_total") >= 2
	})
	notExited(t, r, "restarting on a full disk")
	f.free(t)
	waitAll(t, outDir(cfg), 2000)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), 2000)
}

// TestReviewDiskExpiryOnAFullDisk (passes): a dedup with a short ttl expires its
// old entries (an excise in Pebble: a MANIFEST edit, no table written)
// while state.dir is full. Wanted: checkpoints fail, the job goes on
// without a panic; freed, every record arrives once.
func TestReviewDiskExpiryOnAFullDisk(t *testing.T) {
	if !inReviewChild(t) {
		return
	}
	b := kafkatest.Cluster(t)
	topic := kafkatest.Topic(t, b, 2)
	tmp := reviewTmpfs(t, 64)
	cfg := jobConfig(t, b, topic, tmp, jobOpts{parallelism: 2, transforms: "{type: dedup, key: id, ttl: 1s}", checkpoint: "tolerable_failures: 100000, timeout: 10s"})
	diskLayout(t, cfg, tmp, true, true, false)
	cfg.Restart.MaxFailures = 100000
	r := start(t, cfg)
	n := 0
	for ; n < 20000; n += 2000 { // entries in several flushed tables
		produceIDs(t, b, topic, n, n+2000)
		waitAll(t, outDir(cfg), n+2000)
		r.job.Status()
	}
	f := fillDisk(t, tmp)
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) {
		produceIDs(t, b, topic, n, n+500)
		n += 500
		notExited(t, r, "full, expiring")
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("while full: %d records, restarts=%d failed=%d completed=%d", n, r.counter("connector_job_restarts_total"),
		r.counter("connector_checkpoints_failed_total"), r.counter("connector_checkpoints_completed_total"))
	f.free(t)
	waitAll(t, outDir(cfg), n)
	r.stop(t)
	checkOnce(t, visibleIDs(t, outDir(cfg)), n)
}
