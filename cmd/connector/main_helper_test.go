package main

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, in a test binary re-executed with
// lockHelperEnv set, acts as a running job holding the checkpoint store, or,
// with panicHelperEnv set, runs main with a command that panics, or, with
// signalHelperEnv set, runs main with a command whose stop never ends.
func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		holdStore(dir)
		os.Exit(0)
	}
	if where := os.Getenv(panicHelperEnv); where != "" {
		panicInMain(where)
	}
	if os.Getenv(signalHelperEnv) != "" {
		slowStopInMain()
	}
	os.Exit(m.Run())
}
