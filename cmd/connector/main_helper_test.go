package main

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, in a test binary re-executed with
// lockHelperEnv set, acts as a running job holding the checkpoint store.
func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		holdStore(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
