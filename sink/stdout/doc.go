// Package stdout is the stdout sink (sink.type: stdout), for trying things
// out: each record value goes to standard output as soon as a pre-commit
// flushes it.
//
// It is AT-LEAST-ONCE, not exactly-once: printed output cannot be taken
// back. Its decision record is none (Commit and Recover do nothing), and it
// has no fencing: after a restart the records since the last completed
// checkpoint are printed again, and two processes of one job print twice.
package stdout
