// Package crashpoint lets tests kill the connector at a named point of the
// checkpoint protocol, to hit the narrow windows and not only random ones.
//
// The runtime calls Hit(name) at each point. When the environment variable
// CONNECTOR_CRASH_AT selects that point, the process logs one line to
// stderr,
//
//	crash point <name> reached: SIGKILL
//
// and sends itself SIGKILL: no deferred function, no cleanup, no flush
// runs, as on a power cut of the process. The calling goroutine then blocks
// until the kernel ends the process.
//
// # The variable
//
//	CONNECTOR_CRASH_AT=mid-commit          the first time mid-commit is hit
//	CONNECTOR_CRASH_AT=after-persist:3     the third time (counts start at 1)
//	CONNECTOR_CRASH_AT=after-precommit:2,during-restore
//
// Names must be among Names(); a name may appear once. A malformed value is
// a broken test setup: Validate reports it (call it at start to fail fast),
// and the first Hit panics with the same message rather than run a test
// that silently never crashes.
//
// It owns the names of the points and the decision to crash; where each
// point sits in the protocol is the runtime's (see each constant).
//
// Hit is safe for concurrent use. With the variable unset it costs one
// atomic load, so it may sit on hot paths.
package crashpoint
