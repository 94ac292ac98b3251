package deploy

import (
	"errors"
	"os/exec"
	"testing"
)

// tool returns the path of a command-line tool the test runs; without it
// the test fails, saying how to install it (never a skip, which would
// pass unnoticed).
func tool(t *testing.T, name, how string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (%v): %s", name, err, how)
	}
	return path
}

// run runs a tool in dir and returns its stdout; it fails the test on a
// non-zero exit, with what the tool printed.
func run(t *testing.T, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = append(out, ee.Stderr...)
		}
		t.Fatalf("%s %v (in %s): %v\n%s", name, args, dir, err, out)
	}
	return out
}
