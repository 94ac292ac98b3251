package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/connector-dev/connector/group"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/checkpoint/store"
)

// checkpointJob writes a job config whose checkpoint and state dirs are in
// a fresh temp dir, and returns the config path and the two dirs.
func checkpointJob(t *testing.T) (config, ckptDir, stateDir string) {
	t.Helper()
	root := t.TempDir()
	ckptDir, stateDir = filepath.Join(root, "checkpoints"), filepath.Join(root, "state")
	config = filepath.Join(root, "job.yaml")
	text := fmt.Sprintf(`name: orders
kafka: {brokers: [localhost:9092]}
source: {topics: [orders]}
checkpoint: {dir: %q}
state: {dir: %q}
sink: {type: stdout}
http: {addr: "127.0.0.1:9999"}
`, ckptDir, stateDir)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return config, ckptDir, stateDir
}

// saveCheckpoints saves checkpoints 1 and 2 through the store: a source
// with JSON offsets, a worker with a JSON handle and one state file, and a
// sink whose committable is not JSON. Then it writes a corrupt metadata
// file for checkpoint 3, newer than both.
func saveCheckpoints(t *testing.T, ckptDir, stateDir string) {
	t.Helper()
	st, err := store.Open(vfs.Default, ckptDir, stateDir, 3, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for id := checkpoint.ID(1); id <= 2; id++ {
		file := fmt.Sprintf("worker-0/%06d.sst", id)
		if err := os.MkdirAll(filepath.Join(stateDir, "worker-0"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stateDir, file), make([]byte, 100*id), 0o644); err != nil {
			t.Fatal(err)
		}
		err := st.Save(checkpoint.Metadata{
			ID:        id,
			Timestamp: time.Date(2026, 3, 1, 12, 0, int(id), 0, time.UTC),
			Tasks: map[checkpoint.TaskID]checkpoint.Snapshot{
				"source":   {Data: fmt.Appendf(nil, `{"orders":{"0":%d,"1":7}}`, id*100)},
				"worker-0": {Data: []byte(`{"keys":3}`), Files: []string{file}},
				"sink-0":   {Data: []byte{0xff, 0x00, 'x'}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(ckptDir, fmt.Sprintf("chk-%020d.meta", 3))
	if err := os.WriteFile(corrupt, []byte("CONNCKPT torn"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointsListShowsEachCheckpointWithItsStatus(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	saveCheckpoints(t, ckptDir, stateDir)
	code, out, errOut := call(t, "checkpoints", "list", "--config", config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{
		"ID  TIMESTAMP             TASKS  STATE FILES  BYTES  STATUS",
		"1   2026-03-01T12:00:01Z  3      1            100    ok",
		"2   2026-03-01T12:00:02Z  3      1            200    ok",
		"3   -                     -      0            0      corrupt: load checkpoint 3 from ",
	}
	if len(lines) != len(want) {
		t.Fatalf("got\n%s", out)
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d:\n got %q\nwant %q...", i, lines[i], want[i])
		}
	}
	if !strings.Contains(lines[3], "checkpoint metadata corrupt") {
		t.Errorf("the corrupt line does not say why: %q", lines[3])
	}
}

func TestCheckpointsListJSON(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	saveCheckpoints(t, ckptDir, stateDir)
	code, out, errOut := call(t, "checkpoints", "list", "--json", "--config", config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []checkpointRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	r := rows[1]
	if r.ID != 2 || r.Timestamp != "2026-03-01T12:00:02Z" || r.Tasks == nil || *r.Tasks != 3 ||
		r.StateFiles != 1 || r.StateBytes != 200 || r.MetaBytes == 0 || r.Status != "ok" || r.Error != "" {
		t.Errorf("row 2 = %+v", r)
	}
	if r := rows[2]; r.ID != 3 || r.Status != "corrupt" || r.Error == "" || r.Tasks != nil || r.Timestamp != "" {
		t.Errorf("row 3 = %+v", r)
	}
}

// shown is `checkpoints show` output, decoded.
type shown struct {
	ID        uint64
	Timestamp time.Time
	Tasks     map[string]struct {
		Data       json.RawMessage `json:"data"`
		DataBase64 string          `json:"data_base64"`
		Files      []string        `json:"files"`
	}
}

func showCheckpoint(t *testing.T, args ...string) shown {
	t.Helper()
	code, out, errOut := call(t, append([]string{"checkpoints", "show"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var s shown
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	return s
}

// TestCheckpointsShowPrintsTheNewestRestorableWithDataDecoded: checkpoint 3
// is corrupt, so show without an id prints 2, as a restart would restore.
func TestCheckpointsShowPrintsTheNewestRestorableWithDataDecoded(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	saveCheckpoints(t, ckptDir, stateDir)
	s := showCheckpoint(t, "--config", config)
	if s.ID != 2 || !s.Timestamp.Equal(time.Date(2026, 3, 1, 12, 0, 2, 0, time.UTC)) {
		t.Errorf("showed %d at %v, want 2", s.ID, s.Timestamp)
	}
	var offsets map[string]map[string]int64
	if err := json.Unmarshal(s.Tasks["source"].Data, &offsets); err != nil || offsets["orders"]["0"] != 200 {
		t.Errorf("source data %s: %v", s.Tasks["source"].Data, err)
	}
	var compact bytes.Buffer
	if w := s.Tasks["worker-0"]; json.Compact(&compact, w.Data) != nil || compact.String() != `{"keys":3}` || len(w.Files) != 1 || w.Files[0] != "worker-0/000002.sst" {
		t.Errorf("worker-0 = %+v", w)
	}
	if sink := s.Tasks["sink-0"]; sink.Data != nil || sink.DataBase64 != "/wB4" {
		t.Errorf("non-JSON data must be base64: %+v", sink)
	}
}

func TestCheckpointsShowByIDWithFlagsOnEitherSide(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	saveCheckpoints(t, ckptDir, stateDir)
	if s := showCheckpoint(t, "--config", config, "1"); s.ID != 1 {
		t.Errorf("show 1 printed %d", s.ID)
	}
	if s := showCheckpoint(t, "1", "--config", config); s.ID != 1 {
		t.Errorf("show 1 (flags after) printed %d", s.ID)
	}
}

func TestCheckpointsShowOfMissingOrCorruptIDFails(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	saveCheckpoints(t, ckptDir, stateDir)
	for id, want := range map[string]string{
		"99": "connector checkpoints show: load checkpoint 99: checkpoint not found\n",
		"3":  "connector checkpoints show: load checkpoint 3 from ",
	} {
		code, out, errOut := call(t, "checkpoints", "show", "--config", config, id)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
			t.Errorf("show %s: exit %d, stdout %q, stderr %q", id, code, out, errOut)
		}
	}
}

// TestCheckpointsOfAJobThatNeverRanLeavesNoTrace: no checkpoint dir is not
// an error for list, and the read-only command does not create it.
func TestCheckpointsOfAJobThatNeverRanLeavesNoTrace(t *testing.T) {
	config, ckptDir, _ := checkpointJob(t)
	code, out, errOut := call(t, "checkpoints", "list", "--json", "--config", config)
	if code != 0 || out != "[]\n" || !strings.Contains(errOut, "does not exist") {
		t.Errorf("list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, _ := call(t, "checkpoints", "show", "--config", config); code != 1 {
		t.Errorf("show: exit %d, want 1", code)
	}
	if _, err := os.Stat(ckptDir); !os.IsNotExist(err) {
		t.Errorf("the checkpoint dir was created: %v", err)
	}
}

func TestCheckpointsShowWithNoRestorableCheckpointFails(t *testing.T) {
	config, ckptDir, _ := checkpointJob(t)
	if err := os.MkdirAll(ckptDir, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := call(t, "checkpoints", "show", "--config", config)
	if code != 1 || errOut != "connector checkpoints show: no restorable checkpoint\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestCheckpointsUsageAndConfigErrors(t *testing.T) {
	config, _, _ := checkpointJob(t)
	for _, args := range [][]string{
		{"checkpoints"},
		{"checkpoints", "frobnicate"},
		{"checkpoints", "list", "extra"},
		{"checkpoints", "show", "--config", config, "1", "2"},
		{"checkpoints", "show", "--config", config, "latest"},
		{"checkpoints", "list", "--config", "no-such.yaml"},
	} {
		code, out, errOut := call(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a message", args, code, out, errOut)
		}
	}
}

// lockHelperEnv makes the test binary, re-executed, hold the checkpoint
// store of the given dir open (as a running job does) until stdin closes.
const lockHelperEnv = "CHECKPOINTS_TEST_HOLD_STORE"

// holdStore is the "running job" of TestCheckpointsOfARunningJobFailFast,
// run by TestMain in a re-executed test binary: it holds the store of dir
// open until stdin closes.
func holdStore(dir string) {
	st, err := store.Open(vfs.Default, dir, dir, 1, zerolog.Nop())
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	defer st.Close()
	os.Stdout.WriteString("locked\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent closes stdin
}

// TestCheckpointsOfARunningJobFailFast: while another process holds the
// store's lock, list exits 1 at once with a message that says why and
// where to look instead; it neither blocks nor touches the store.
func TestCheckpointsOfARunningJobFailFast(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	saveCheckpoints(t, ckptDir, stateDir)

	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), lockHelperEnv+"="+ckptDir)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := helper.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	start := time.Now()
	code, out, errOut := call(t, "checkpoints", "list", "--config", config)
	if time.Since(start) > 5*time.Second {
		t.Errorf("list took %v while the store was locked", time.Since(start))
	}
	wantErr := "connector checkpoints list: checkpoint dir " + ckptDir + " is locked: is the job running?\n" +
		"Stop it first, or ask the running job: GET http://127.0.0.1:9999/api/checkpoints\n"
	if code != 1 || out != "" || !strings.HasPrefix(errOut, wantErr) {
		t.Errorf("exit %d\nstdout %q\nstderr:\n%s\nwant stderr starting:\n%s", code, out, errOut, wantErr)
	}
}

// TestCheckpointsOfAGroupModeJobAreASlots: in group mode each slot has its
// checkpoints under checkpoint.dir/slot-<k>; list and show read the one
// --slot names, and without it say so (exit 2), as --slot does in single
// mode.
func TestCheckpointsOfAGroupModeJobAreASlots(t *testing.T) {
	config, ckptDir, stateDir := checkpointJob(t)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("instances: {mode: group, slots: 4}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	saveCheckpoints(t, filepath.Join(ckptDir, "slot-2"), filepath.Join(stateDir, "slot-2"))

	code, out, errOut := call(t, "checkpoints", "list", "--config", config, "--slot", "2")
	if code != 0 || !strings.Contains(out, "\n2   2026-03-01T12:00:02Z  3      1            200    ok") {
		t.Errorf("list --slot 2: exit %d, out:\n%s%s", code, out, errOut)
	}
	if code, out, errOut = call(t, "checkpoints", "list", "--config", config, "--slot", "1"); code != 0 || strings.Contains(out, "ok") {
		t.Errorf("list --slot 1 (no checkpoint): exit %d, out:\n%s%s", code, out, errOut)
	}
	if code, out, _ := call(t, "checkpoints", "show", "--config", config, "--slot", "2", "1"); code != 0 || !strings.Contains(out, `"id": 1`) {
		t.Errorf("show --slot 2 1: exit %d, out:\n%s", code, out)
	}
	for _, args := range [][]string{{}, {"--slot", "4"}} {
		code, _, errOut := call(t, append([]string{"checkpoints", "list", "--config", config}, args...)...)
		if code != 2 || !strings.Contains(errOut, "runs in group mode: each of its 4 slots has its own checkpoints; name one with --slot (0 to 3)") {
			t.Errorf("list %v: exit %d, stderr %q", args, code, errOut)
		}
	}
	single, _, _ := checkpointJob(t)
	if code, _, errOut := call(t, "checkpoints", "list", "--config", single, "--slot", "0"); code != 2 || !strings.Contains(errOut, "--slot is for a job with instances.mode: group") {
		t.Errorf("--slot in single mode: exit %d, stderr %q", code, errOut)
	}

	// A member runs slot 2: it holds the slot's lock, and the command says
	// so. A command reading slot 2 holds the slot's lock too, so that a
	// member given the slot meanwhile waits for it, as for a handover;
	// holding the store's lock alone, it made that member find the store
	// locked, fail for good and leave its group.
	job, _ := loadJob(config, io.Discard)
	member, err := store.Lock(vfs.Default, group.LockPath(job, 2))
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = call(t, "checkpoints", "list", "--config", config, "--slot", "2")
	if code != 1 || !strings.Contains(errOut, "slot 2 is run by a member of the job's group") {
		t.Errorf("list --slot 2 while a member runs it: exit %d, stderr %q", code, errOut)
	}
	_ = member.Close()
	st, _, ok := openStoreFor(context.Background(), config, 2, "connector checkpoints list", "", false, io.Discard)
	if !ok || st == nil {
		t.Fatal("openStoreFor --slot 2 failed")
	}
	if l, err := store.Lock(vfs.Default, group.LockPath(job, 2)); !errors.Is(err, store.ErrLocked) {
		if l != nil {
			_ = l.Close()
		}
		t.Fatalf("a member's lock of slot 2 while a command reads its checkpoints: %v, want ErrLocked (the member waits)", err)
	}
	_ = st.Close()
	l, err := store.Lock(vfs.Default, group.LockPath(job, 2))
	if err != nil {
		t.Fatalf("slot 2's lock after the command: %v, want it free", err)
	}
	_ = l.Close()
}
