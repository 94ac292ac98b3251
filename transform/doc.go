// Package transform owns the built-in record transforms of a pipeline and
// the chain that runs them: filter (keep records whose JSON value satisfies
// a condition), project (keep, drop and rename top-level fields) and dedup
// (drop records whose key field was seen within a TTL).
//
// Each transform is a registered Kind (registry.go): its name (the "type"
// of an item of pipeline.transforms), its config struct, which is the
// YAML section itself (`yaml`, `default` and `doc` tags, a Validate method:
// package internal/spec), and its constructor. The config loader decodes
// the file's items into these structs and validates them with the same
// code the constructors (NewFilter, NewProject, NewDedup, or New by kind,
// or Build for a whole list) use, so a config that validates builds.
// Errors name the key (ErrInvalidConfig). A transform of another package
// registers with Register from its init.
//
// Record values are JSON objects. A Chain decodes a value at most once, into
// byte spans rather than Go maps, shares it between its transforms, and
// re-encodes it once at the end only if a transform changed it. A value
// that is not a JSON object makes Apply fail with a *DecodeError wrapping
// ErrDecode; what happens to the record then (fail the job, skip it, send it
// to a dead-letter topic) is the runtime's policy, not this package's.
//
// The Transform and KV interfaces document the lifecycle the runtime
// follows: one instance per worker, Apply from one goroutine in record
// order, state only in the KV (which the state package snapshots and
// restores with the checkpoint), and determinism on replay (record
// timestamps, not the wall clock; a dedup's one use of the clock, bounding
// how far a record stamped ahead of it moves the expiry, is in Dedup.clamp).
//
// This package does not own: where records come from or go, barriers and
// checkpoints (a transform does nothing at a barrier; its KV is snapshotted
// by the runtime), the KV's storage (the state package), metrics export
// (Chain.Stats gives the counters to whoever exports them), or logging (it
// logs nothing; it returns errors).
package transform
