//go:build unix

package store

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envModeHolder makes the test binary a process that holds a mode lock:
// "<dir>:group" or "<dir>:single".
const envModeHolder = "STORE_TEST_HOLD_MODE"

// TestMain runs the tests, or, as another process started by holdMode
// (fcntl locks never conflict within one process), takes the mode lock its
// environment names, says "held", and holds it until stdin closes.
func TestMain(m *testing.M) {
	arg := os.Getenv(envModeHolder)
	if arg == "" {
		os.Exit(m.Run())
	}
	dir, mode, _ := strings.Cut(arg, ":")
	l, err := LockMode(dir, mode == "group")
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("held\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	l.Close()
	os.Exit(0)
}

// holdMode runs another process holding dir's mode lock until the test ends.
func holdMode(t *testing.T, dir string, group bool) {
	t.Helper()
	mode := "single"
	if group {
		mode = "group"
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envModeHolder+"="+dir+":"+mode)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
}

func TestLockModeKeepsTheModesApart(t *testing.T) {
	t.Run("group members beside a group member", func(t *testing.T) {
		dir := t.TempDir()
		holdMode(t, dir, true)
		l, err := LockMode(dir, true)
		if err != nil {
			t.Fatalf("a second member: %v", err)
		}
		l.Close()
	})
	t.Run("a single-mode process beside a group member", func(t *testing.T) {
		dir := t.TempDir()
		holdMode(t, dir, true)
		_, err := LockMode(dir, false)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "a member of the job's group") {
			t.Fatalf("LockMode = %v, want ErrLocked naming the group's member", err)
		}
	})
	t.Run("a group member beside a single-mode process", func(t *testing.T) {
		dir := t.TempDir()
		holdMode(t, dir, false)
		_, err := LockMode(dir, true)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "a single-mode process of the job") {
			t.Fatalf("LockMode = %v, want ErrLocked naming the single-mode process", err)
		}
	})
	t.Run("a second single-mode process is the store's to refuse", func(t *testing.T) {
		dir := t.TempDir()
		holdMode(t, dir, false)
		l, err := LockMode(dir, false)
		if err != nil {
			t.Fatalf("LockMode = %v, want no error (the store's LOCK refuses it, with its own message)", err)
		}
		l.Close()
	})
}
