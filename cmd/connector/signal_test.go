package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// signalHelperEnv makes the test binary, re-executed, run main with a
// command whose stop never ends, as a final checkpoint that cannot
// complete.
const signalHelperEnv = "CONNECTOR_TEST_SLOW_STOP"

// slowStopInMain runs the real main with a command that says "running",
// then, once asked to stop, says "stopping" and never returns.
func slowStopInMain() {
	register("slow-stop", command{
		summary: "test only: a stop that never ends",
		run: func(ctx context.Context, _ []string, stdout, _ io.Writer) int {
			_, _ = io.WriteString(stdout, "running\n")
			<-ctx.Done()
			_, _ = io.WriteString(stdout, "stopping\n")
			select {}
		},
	})
	os.Args = []string{"connector", "slow-stop"}
	main()
}

// TestASecondSignalEndsASlowStopAtOnce: the first SIGINT asks for a final
// checkpoint; a second one, while that checkpoint is slow, must end the
// process at once, with 128 plus the signal's number, instead of being
// swallowed.
func TestASecondSignalEndsASlowStopAtOnce(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), signalHelperEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := bufio.NewScanner(out)
			expect := func(want string) {
				t.Helper()
				if !lines.Scan() || lines.Text() != want {
					t.Fatalf("helper said %q (%v), want %q", lines.Text(), lines.Err(), want)
				}
			}
			expect("running")
			_ = cmd.Process.Signal(sig)
			expect("stopping") // the first signal was caught: the command is stopping
			_ = cmd.Process.Signal(sig)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Fatalf("the helper did not fail: %v", err)
				}
				if code := exit.ExitCode(); code != 128+int(sig) {
					t.Fatalf("exit code %d (%v), want %d", code, exit, 128+int(sig))
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("the second %v was swallowed: the process still ran 20 s later", sig)
			}
		})
	}
}
