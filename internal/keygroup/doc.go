// Package keygroup splits keyed state into key groups, as Flink does, so
// that a stateful job can be restarted with another parallelism.
//
// A job has a fixed number of key groups, its max parallelism M (1 to
// MaxLimit, DefaultMax unless configured). A record's key group is Of(key,
// M): FNV-1a 64 of the key, not seeded, modulo M, so the same key lands in
// the same key group in every process and after every restart. Worker i of
// P owns the contiguous Range RangeOf(M, P, i); the ranges of the P workers
// tile 0..M-1, and OperatorOf(kg, M, P) is the worker whose range holds kg.
// Changing P moves whole key groups between workers, never splits one: the
// state of key group kg is always found in exactly one worker's snapshot.
//
// The package owns these formulas and nothing else: it is pure (no I/O, no
// state) and safe from any goroutine. It does not route records (the
// pipeline does, with OperatorOf(Of(key, M), M, P)), decide which key group
// a keyless record belongs to, or store anything (package state prefixes
// every state key with its key group and restores the ranges it is given).
package keygroup
