package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// panicHelperEnv makes the test binary, re-executed, run main with a
// command that panics: "main" on the main goroutine, "goroutine" on
// another one.
const panicHelperEnv = "CONNECTOR_TEST_PANIC_IN"

// panicInMain runs the real main, as the binary does, with os.Args naming
// a command that panics where says. main exits; it does not return.
func panicInMain(where string) {
	// A crash must not leave a core file behind, whatever ulimit -c says.
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	register("panic", command{
		summary: "test only: panic",
		run: func(ctx context.Context, _ []string, _, _ io.Writer) int {
			if where == "main" {
				panic("test panic on the main goroutine")
			}
			go func() { panic("test panic on another goroutine") }()
			<-ctx.Done()
			return exitOK
		},
	})
	os.Args = []string{"connector", "panic"}
	main()
}

// TestAPanicNeverExitsTwo: exit code 2 means a bad config; a bug must end
// the process otherwise. A panic on the main goroutine exits with 3 and
// its stack; a panic on any other goroutine, which nothing can recover,
// ends the process with SIGABRT and every goroutine's stack.
func TestAPanicNeverExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		where    string
		code     int            // exit code, if it exits
		signal   syscall.Signal // else the signal that ended it
		inStderr []string
	}{
		{where: "main", code: exitInternal, inStderr: []string{
			"connector: internal error (a bug; please report it): panic: test panic on the main goroutine\n",
			"panic_test.go"}},
		{where: "goroutine", signal: syscall.SIGABRT, inStderr: []string{
			"panic: test panic on another goroutine\n",
			"panic_test.go", "goroutine 1 "}}, // every goroutine's stack, main's too
	} {
		t.Run(tc.where, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), panicHelperEnv+"="+tc.where, "GOTRACEBACK=")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the helper did not fail: %v\n%s", err, stderr.String())
			}
			ws := exit.Sys().(syscall.WaitStatus)
			switch {
			case ws.Exited() && ws.ExitStatus() == exitUsage:
				t.Errorf("a panic exited with %d, the code of a bad config", exitUsage)
			case tc.signal == 0 && (!ws.Exited() || ws.ExitStatus() != tc.code):
				t.Errorf("wait status %v, want exit code %d", ws, tc.code)
			case tc.signal != 0 && (!ws.Signaled() || ws.Signal() != tc.signal):
				t.Errorf("wait status %v, want death by %v", ws, tc.signal)
			}
			for _, want := range tc.inStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}
