package crashpoint

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestParseAcceptsNamesCountsAndLists(t *testing.T) {
	for value, want := range map[string]map[string]uint64{
		"":                                    {},
		"  ":                                  {},
		"mid-commit":                          {MidCommit: 1},
		"after-persist:3":                     {AfterPersist: 3},
		"after-precommit:2, during-restore":   {AfterPreCommit: 2, DuringRestore: 1},
		"mid-commit:1,after-persist:10":       {MidCommit: 1, AfterPersist: 10},
		"during-restore:18446744073709551615": {DuringRestore: 1<<64 - 1},
	} {
		tab, err := parse(value)
		if err != nil {
			t.Errorf("parse(%q): %v", value, err)
			continue
		}
		got := map[string]uint64{}
		for name, p := range tab.points {
			got[name] = p.at
		}
		if !maps.Equal(got, want) || tab.armed.Load() != (len(want) > 0) {
			t.Errorf("parse(%q) = %v armed %v, want %v", value, got, tab.armed.Load(), want)
		}
	}
}

func TestParseRejectsMalformedValues(t *testing.T) {
	for value, want := range map[string]string{
		"mid-comit":               `CONNECTOR_CRASH_AT="mid-comit": unknown crash point "mid-comit" (known: after-flush, after-part-upload, after-persist, after-precommit, before-endtxn, between-commits, between-completes, during-restore, mid-commit)`,
		"mid-commit:0":            `CONNECTOR_CRASH_AT="mid-commit:0": "mid-commit:0": the count after ':' must be a whole number from 1`,
		"mid-commit:x":            `CONNECTOR_CRASH_AT="mid-commit:x": "mid-commit:x": the count after ':' must be a whole number from 1`,
		"mid-commit:":             `CONNECTOR_CRASH_AT="mid-commit:": "mid-commit:": the count after ':' must be a whole number from 1`,
		"mid-commit,":             `CONNECTOR_CRASH_AT="mid-commit,": unknown crash point "" (known: after-flush, after-part-upload, after-persist, after-precommit, before-endtxn, between-commits, between-completes, during-restore, mid-commit)`,
		"mid-commit:1,mid-commit": `CONNECTOR_CRASH_AT="mid-commit:1,mid-commit": crash point "mid-commit" given twice`,
	} {
		if _, err := parse(value); err == nil || err.Error() != want {
			t.Errorf("parse(%q) error:\n got %v\nwant %s", value, err, want)
		}
	}
}

// armedTable parses value and records kills instead of performing them.
func armedTable(t *testing.T, value string) (*table, *[]string) {
	t.Helper()
	tab, err := parse(value)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var killed []string
	tab.kill = func(name string) {
		mu.Lock()
		defer mu.Unlock()
		killed = append(killed, name)
	}
	return tab, &killed
}

func TestCrashesOnlyOnTheSelectedHit(t *testing.T) {
	tab, killed := armedTable(t, "mid-commit:3,after-persist")
	tab.hit(MidCommit)
	tab.hit(MidCommit)
	tab.hit(DuringRestore)
	if len(*killed) != 0 {
		t.Fatalf("killed too early: %v", *killed)
	}
	tab.hit(MidCommit)
	if !slices.Equal(*killed, []string{MidCommit}) {
		t.Fatalf("third mid-commit hit: killed %v", *killed)
	}
	tab.hit(MidCommit) // had the kill not ended the process, no second one
	tab.hit(AfterPersist)
	if !slices.Equal(*killed, []string{MidCommit, AfterPersist}) {
		t.Errorf("killed %v", *killed)
	}
}

func TestUnsetVariableNeverCrashes(t *testing.T) {
	tab, killed := armedTable(t, "")
	for range 100 {
		for _, n := range Names() {
			tab.hit(n)
		}
	}
	if len(*killed) != 0 {
		t.Errorf("killed %v", *killed)
	}
}

// TestConcurrentHitsCrashExactlyOnce: the Nth hit is counted once even when
// hits race.
func TestConcurrentHitsCrashExactlyOnce(t *testing.T) {
	tab, killed := armedTable(t, "after-precommit:500")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				tab.hit(AfterPreCommit)
			}
		})
	}
	wg.Wait()
	if len(*killed) != 1 {
		t.Errorf("killed %d times, want once", len(*killed))
	}
}

func TestNamesAreTheConstants(t *testing.T) {
	want := []string{AfterFlush, AfterPartUpload, AfterPersist, AfterPreCommit, BeforeEndTxn, BetweenCommits, BetweenCompletes, DuringRestore, MidCommit}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	Names()[0] = "changed"
	if Names()[0] != AfterFlush {
		t.Error("Names() exposes the package's slice")
	}
}

// helperEnv makes the test binary, re-executed, act as a process that hits
// mid-commit three times.
const helperEnv = "CRASHPOINT_TEST_HELPER"

// TestMain makes the re-executed test binary act as the child of
// TestHitKillsTheProcessWithSIGKILL when helperEnv is set, and runs the
// tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		helperProcess()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperProcess hits mid-commit three times, saying so before each hit.
func helperProcess() {
	defer os.Stdout.WriteString("deferred function ran\n")
	for i := 1; i <= 3; i++ {
		os.Stdout.WriteString("before hit " + string(rune('0'+i)) + "\n")
		Hit(MidCommit)
	}
	os.Stdout.WriteString("survived\n")
}

// runHelper runs helperProcess in a child with Env set to crashAt.
func runHelper(t *testing.T, crashAt string) (err error, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1", Env+"="+crashAt)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return err, out.String(), errOut.String()
}

// TestHitKillsTheProcessWithSIGKILL runs a real process that selects the
// second mid-commit hit: it dies by SIGKILL there, logs the crash line, and
// runs nothing after it, deferred functions included.
func TestHitKillsTheProcessWithSIGKILL(t *testing.T) {
	err, stdout, stderr := runHelper(t, "mid-commit:2")

	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child did not fail: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	ws := exit.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL\nstderr:\n%s", ws, stderr)
	}
	if got, want := stdout, "before hit 1\nbefore hit 2\n"; got != want {
		t.Errorf("child stdout = %q, want %q (nothing after the kill)", got, want)
	}
	if !strings.Contains(stderr, "crash point mid-commit reached: SIGKILL") {
		t.Errorf("stderr lacks the crash line:\n%s", stderr)
	}
}

// TestMalformedVariableFailsLoudly: a typo in the variable must not turn a
// crash test into one that never crashes; the first Hit panics instead.
func TestMalformedVariableFailsLoudly(t *testing.T) {
	err, stdout, stderr := runHelper(t, "mid-comit")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("child ended with %v, want a panic's exit", err)
	}
	if !strings.HasPrefix(stdout, "before hit 1\n") || strings.Contains(stdout, "before hit 2") || !strings.Contains(stderr, `panic: CONNECTOR_CRASH_AT="mid-comit": unknown crash point`) {
		t.Errorf("stdout %q\nstderr:\n%s", stdout, stderr)
	}
}
