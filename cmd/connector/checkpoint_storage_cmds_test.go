package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/s3storage"
	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/kafkatest"
	"github.com/connector-dev/connector/internal/s3test"
)

// machine is one place a job with checkpoint.storage runs from: its
// checkpoint and state dirs (under root), and a config naming them.
type machine struct {
	root, config, ckptDir, stateDir string
}

// storageJob is a job's config on a machine of its own: name, brokers
// (default localhost:9092), sink (a YAML flow mapping), checkpoint.storage
// in bucket on the server of c.
type storageJob struct {
	name, brokers, sink, bucket string
	c                           s3test.Config
}

// on writes the job's config for a fresh machine, whose dirs do not exist
// yet. endpoint, secret and bucket replace the job's when not empty.
func (j storageJob) on(t *testing.T, endpoint, secret, bucket string) machine {
	t.Helper()
	return j.at(t, t.TempDir(), endpoint, secret, bucket)
}

// at is on for the machine whose dirs are under root.
func (j storageJob) at(t *testing.T, root, endpoint, secret, bucket string) machine {
	t.Helper()
	m := machine{root: root, config: filepath.Join(t.TempDir(), "job.yaml"), ckptDir: filepath.Join(root, "checkpoints"), stateDir: filepath.Join(root, "state")}
	text := fmt.Sprintf(`name: %s
kafka: {brokers: [%q]}
source: {topics: [orders]}
checkpoint:
  dir: %q
  storage: s3://%s/checkpoints
  s3: {endpoint: %q, region: %q, access_key_id: %q, secret_access_key: %q}
state: {dir: %q}
sink: %s
http: {addr: "127.0.0.1:9999"}
`, j.name, cmpOr(j.brokers, "localhost:9092"), m.ckptDir, cmpOr(bucket, j.bucket), cmpOr(endpoint, j.c.Endpoint), j.c.Region, j.c.AccessKey, cmpOr(secret, j.c.SecretKey), m.stateDir, j.sink)
	if err := os.WriteFile(m.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// save saves checkpoints on machine m as the job does: through its store
// with the bucket attached (which brings the bucket's newer ones down
// first), each with a state file of its own.
func (j storageJob) save(t *testing.T, m machine, mds ...checkpoint.Metadata) {
	t.Helper()
	st, err := store.Open(vfs.Default, m.ckptDir, m.stateDir, 3, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job, err := config.Load(m.config)
	if err != nil {
		t.Fatal(err)
	}
	bucket, prefix, err := config.ParseStorage(job.Checkpoint.Storage)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s3storage.Open(ctx, job.Checkpoint.S3, bucket, prefix, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AttachRemote(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, md := range mds {
		saveWithStateFile(t, st, m.stateDir, md)
	}
}

// saveWithStateFile saves md in st, its worker 0 with a state file of its
// own (worker-0/<id>.sst) under stateDir.
func saveWithStateFile(t *testing.T, st *store.Store, stateDir string, md checkpoint.Metadata) {
	t.Helper()
	file := fmt.Sprintf("worker-0/%06d.sst", md.ID)
	if err := os.MkdirAll(filepath.Join(stateDir, "worker-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, file), make([]byte, 10*md.ID), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := md.Tasks["worker-0"]
	snap.Files = []string{file}
	md.Tasks["worker-0"] = snap
	if err := st.Save(md); err != nil {
		t.Fatal(err)
	}
}

// chk is checkpoint id of job, its worker 0 holding committables.
func chk(id checkpoint.ID, job string, committables ...json.RawMessage) checkpoint.Metadata {
	worker, _ := json.Marshal(map[string]any{"committables": committables})
	return checkpoint.Metadata{ID: id, Job: job, Timestamp: time.Date(2026, 3, 1, 12, 0, int(id), 0, time.UTC),
		Tasks: map[checkpoint.TaskID]checkpoint.Snapshot{
			"source-0": {Data: fmt.Appendf(nil, `{"orders":{"0":%d}}`, id*100)},
			"worker-0": {Data: worker},
		}}
}

// deadEndpoint is an http:// endpoint where nothing listens.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestCheckpointsCommandsShowTheCheckpointTheJobWouldRestoreFromStorage:
// with checkpoint.storage, a machine whose checkpoint dir is behind the
// bucket (the job went on elsewhere), and a new one without any, list and
// show the bucket's newest checkpoint, the one the job would restore.
// They showed the local directory's: an older checkpoint, or none. An
// unreachable storage gives the local view with a warning; a bad bucket or
// refused credentials exit 2 naming the key.
func TestCheckpointsCommandsShowTheCheckpointTheJobWouldRestoreFromStorage(t *testing.T) {
	c := s3test.Server(t)
	j := storageJob{name: "orders", sink: "{type: stdout}", bucket: s3test.Bucket(t, c), c: c}
	a, behind, fresh, cutOff := j.on(t, "", "", ""), j.on(t, "", "", ""), j.on(t, "", "", ""), j.on(t, "", "", "")
	j.save(t, a, chk(1, j.name))
	j.save(t, behind) // brings checkpoint 1 down, as the job's start there did
	j.save(t, cutOff)
	j.save(t, a, chk(2, j.name), chk(3, j.name))

	for name, m := range map[string]machine{"behind": behind, "new": fresh} {
		code, out, errOut := call(t, "checkpoints", "show", "--config", m.config)
		var got shown
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.ID != 3 {
			t.Errorf("%s machine: checkpoints show: exit %d, stdout %s, stderr %s; want checkpoint 3, the bucket's newest", name, code, out, errOut)
		}
		code, out, errOut = call(t, "checkpoints", "list", "--config", m.config, "--json")
		var rows []checkpointRow
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) == 0 || rows[len(rows)-1].ID != 3 || rows[len(rows)-1].Status != "ok" {
			t.Errorf("%s machine: checkpoints list: exit %d, stdout %s, stderr %s; want checkpoint 3 last, ok", name, code, out, errOut)
		}
	}

	// The storage does not answer: the local view, said to be one.
	down := j.at(t, cutOff.root, deadEndpoint(t), "", "")
	code, out, errOut := call(t, "checkpoints", "show", "--config", down.config)
	var got shown
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.ID != 1 || !strings.Contains(errOut, "WARNING: checkpoint storage s3://"+j.bucket+"/checkpoints cannot be read: what follows is the local checkpoint directory only") {
		t.Errorf("storage down: checkpoints show: exit %d, stdout %s, stderr %s; want the local newest and a warning", code, out, errOut)
	}

	// A config error exits 2, naming the key, whatever the local dir holds.
	for key, m := range map[string]machine{
		"checkpoint.storage":          j.on(t, "", "", j.bucket+"-missing"),
		"checkpoint.s3.access_key_id": j.at(t, behind.root, "", "not-the-secret", ""),
	} {
		code, _, errOut := call(t, "checkpoints", "list", "--config", m.config)
		if code != exitUsage || !strings.Contains(errOut, key) {
			t.Errorf("%s wrong: checkpoints list: exit %d, stderr %s; want 2 and the key named", key, code, errOut)
		}
	}
}

// TestTxnsJudgeAgainstTheCheckpointTheJobWouldRestoreFromStorage: the
// newest checkpoint, in the bucket only, needs an open transaction of the
// job; an older one, in the local dir too, does not name it. On that
// machine txns abort took the transaction for a stray one and aborted the
// newest checkpoint's output (lost, once the output topic's retention has
// dropped it), and txns commit refused it, advising to abort. Judged
// against the bucket's newest, abort is refused and commit commits it;
// with the storage unreachable both refuse, leaving the transaction open.
func TestTxnsJudgeAgainstTheCheckpointTheJobWouldRestoreFromStorage(t *testing.T) {
	b := kafkatest.RealCluster(t)
	topic := kafkatest.Topic(t, b, 1)
	c := s3test.Server(t)
	name := fmt.Sprintf("txns-storage-%d", time.Now().UnixNano())
	j := storageJob{name: name, brokers: b.Addrs[0], sink: fmt.Sprintf("{type: kafka, topic: %q}", topic), bucket: s3test.Bucket(t, c), c: c}
	txnID := name + "-w0-t0"

	// The newest checkpoint's output: one record in a transaction left open.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(5*time.Minute)) // open for the whole test, however slow
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec, err := prod.ProduceSync(ctx, kgo.StringRecord("checkpoint 2")).First()
	if err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seg, _ := json.Marshal(map[string]any{"txn": txnID, "pid": pid, "epoch": epoch, "records": 1,
		"ranges": []map[string]any{{"topic": topic, "partition": rec.Partition, "first": rec.Offset, "last": rec.Offset}}})
	committable, _ := json.Marshal(map[string]any{"checkpoint": 2, "writer": 0, "data": json.RawMessage(seg)})

	a, behind, fresh, cutOff := j.on(t, "", "", ""), j.on(t, "", "", ""), j.on(t, "", "", ""), j.on(t, "", "", "")
	j.save(t, a, chk(1, name))
	j.save(t, behind) // brings checkpoint 1 down, as the job's start there did
	j.save(t, cutOff)
	j.save(t, a, chk(2, name, committable))

	code, out, errOut := call(t, "txns", "list", "--config", behind.config)
	if code != 0 || !strings.Contains(out, "restorable checkpoint 2\n") || !strings.Contains(out, "2 (needed)") {
		t.Errorf("machine behind: txns list: exit %d\nstdout:\n%s\nstderr:\n%s\nwant checkpoint 2, and %s needed", code, out, errOut, txnID)
	}
	for label, m := range map[string]machine{"behind": behind, "new": fresh} {
		code, _, errOut := call(t, "txns", "abort", "--config", m.config, txnID)
		if code != exitFailure || !strings.Contains(errOut, "holds the output of checkpoint 2, which completed and is not committed yet: aborting is refused") {
			t.Errorf("%s machine: txns abort %s: exit %d, stderr %s; want it refused: checkpoint 2 needs it", label, txnID, code, errOut)
		}
	}

	// The storage does not answer: nothing is judged from the local dir,
	// which holds checkpoint 1 only.
	down := j.at(t, cutOff.root, deadEndpoint(t), "", "")
	for _, sub := range []string{"abort", "commit"} {
		code, _, errOut := call(t, "txns", sub, "--config", down.config, txnID)
		if code != exitFailure || !strings.Contains(errOut, "refused: checkpoint storage s3://"+j.bucket+"/checkpoints cannot be read") {
			t.Errorf("storage down: txns %s: exit %d, stderr %s; want 1 and a refusal naming the storage", sub, code, errOut)
		}
	}

	// Every refusal left the transaction open: committing it now works.
	code, out, errOut = call(t, "txns", "commit", "--config", behind.config, txnID)
	if code != 0 || !strings.Contains(out, "the output of checkpoint 2 is committed") {
		t.Errorf("machine behind: txns commit %s: exit %d, stdout %s, stderr %s; want checkpoint 2's output committed", txnID, code, out, errOut)
	}
}
