package s3

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/crashpoint"
	"github.com/connector-dev/connector/internal/s3test"
	"github.com/connector-dev/connector/sink"
)

// The crash points of this sink, hit for real: a child process (this test
// binary again) writes to the real S3 server and is killed with SIGKILL
// at the point; the parent then recovers from what the child recorded.

// Environment of the child: which scenario, the bucket, where to record
// the committables of its checkpoint.
const (
	helperEnv       = "S3SINK_CRASH_HELPER"
	helperBucketEnv = "S3SINK_CRASH_BUCKET"
	helperOutEnv    = "S3SINK_CRASH_OUT"
)

func TestMain(m *testing.M) {
	if scenario := os.Getenv(helperEnv); scenario != "" {
		crashHelper(scenario)
		os.Exit(0) // the crash point did not kill the process: the parent fails
	}
	os.Exit(m.Run())
}

// crashHelper runs in the child. Every step must succeed; the crash point
// selected by crashpoint.Env ends it.
func crashHelper(scenario string) {
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(3)
		}
	}
	srv := s3test.Config{Endpoint: os.Getenv(s3test.EnvEndpoint), AccessKey: os.Getenv(s3test.EnvAccessKey), SecretKey: os.Getenv(s3test.EnvSecretKey), Region: "us-east-1"}
	e := realEnv{srv: srv, bucket: os.Getenv(helperBucketEnv)}
	s, err := New(e.config(crashConfig(scenario)), zerolog.Nop())
	must(err)
	sw, err := s.NewWriter(0)
	must(err)
	w := sw.(*writer)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			r := rec(i)
			r.Value = bigValue(i)
			must(w.Write(ctx, r))
		}
	}
	save := func(cs []sink.Committable) {
		data, err := json.Marshal(cs)
		must(err)
		must(os.WriteFile(os.Getenv(helperOutEnv), data, 0o644))
	}
	switch scenario {
	case "after-part-upload":
		write(0, 6000) // one part (hit 1) and a tail
		cs, err := w.PreCommit(ctx, 1)
		must(err)
		save(cs)
		must(s.Commit(ctx, cs))
		write(6000, 12000) // the second part: killed once it is uploaded
		_, err = w.PreCommit(ctx, 2)
		must(err)
	case "between-completes":
		write(0, 13000) // two objects roll, a third is open
		cs, err := w.PreCommit(ctx, 1)
		must(err)
		save(cs)
		must(s.Commit(ctx, cs)) // killed before the second complete
	}
}

func crashConfig(scenario string) func(*Config) {
	if scenario == "between-completes" {
		return func(c *Config) { c.RollSize = 6 * mib }
	}
	return nil
}

// runCrashChild runs scenario in a child killed at crashAt and returns the
// committables it recorded.
func runCrashChild(t *testing.T, e realEnv, scenario, crashAt string) []sink.Committable {
	t.Helper()
	out := filepath.Join(t.TempDir(), "committables.json")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+scenario, helperBucketEnv+"="+e.bucket, helperOutEnv+"="+out, crashpoint.Env+"="+crashAt)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %s: %v, want killed by SIGKILL at %s\nstderr:\n%s", scenario, err, crashAt, stderr.String())
	}
	if !strings.Contains(stderr.String(), "crash point "+strings.Split(crashAt, ":")[0]+" reached") {
		t.Fatalf("child died elsewhere than at %s:\n%s", crashAt, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the child recorded no committables: %v", err)
	}
	var cs []sink.Committable
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// Killed right after uploading a part no checkpoint records: the restart
// from checkpoint 1 resumes the object from its recorded part and tail;
// the stray part is overwritten, the output exactly once.
func TestRealS3KilledAfterAPartUploadResumesExactlyOnce(t *testing.T) {
	e := newRealEnv(t)
	cs := runCrashChild(t, e, "after-part-upload", crashpoint.AfterPartUpload+":2")
	o := decodeAll(t, cs)[0].Open
	if o == nil || len(o.Parts) != 1 {
		t.Fatalf("checkpoint 1 recorded %+v, want an open object with one part", o)
	}
	s := e.sink(nil)
	if err := s.Recover(e.ctx(), cs); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	w := newTestWriter(t, s, 0)
	writeBig(t, w, 6000, 12000)
	w.EndInput()
	checkpointed(t, s, w, 2)
	e.assertVisibleOnce(ids(0, 12000))
	e.assertClean()
}

// Killed between the two completes of one commit: one object visible, the
// next not; Recover completes the rest, exactly once.
func TestRealS3KilledBetweenCompletesRecoversExactlyOnce(t *testing.T) {
	e := newRealEnv(t)
	cs := runCrashChild(t, e, "between-completes", crashpoint.BetweenCompletes)
	d := decodeAll(t, cs)
	if len(d) != 1 || len(d[0].Complete) != 2 || d[0].Open == nil {
		t.Fatalf("checkpoint 1 recorded %+v, want two rolled objects and one open", d)
	}
	if got := e.keys("out/" + jobDir); len(got) != 1 || got[0] != d[0].Complete[0].Key {
		t.Fatalf("visible after the kill: %v, want only %s", got, d[0].Complete[0].Key)
	}
	s := e.sink(crashConfig("between-completes"))
	if err := s.Recover(e.ctx(), cs); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if got := s.Stats().FilesCommitted; got != 1 {
		t.Errorf("Recover completed %d objects, want 1 (the other was visible)", got)
	}
	w := newTestWriter(t, s, 0)
	w.EndInput()
	checkpointed(t, s, w, 2)
	e.assertVisibleOnce(ids(0, 13000))
	e.assertClean()
}
