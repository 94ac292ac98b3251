// Package source defines what the runtime needs from a source of records,
// whatever the system behind it: the Source and Reader interfaces with their
// lifecycle, the Emitter a reader hands records and barriers to, the
// optional Lagger (how far behind its input a source is, for the job's
// metrics), and the registry of source kinds (Kind, Register, Open). A
// reader's position at a barrier is an opaque Position that the runtime
// stores in the checkpoint and gives back on restore and commit.
//
// It owns no implementation: the Kafka source is package source/kafka (the
// default kind). It never decides when a checkpoint is triggered or
// complete: the runtime (package pipeline) tells a Reader to trigger and
// tells the Source to commit.
//
// # Adding a source
//
//  1. A package (source/<name>) with a config struct for its source:
//     section and a Validate method (see package internal/spec), a type
//     implementing Source and one implementing Reader.
//  2. In its init: Register(Kind{Name, Summary, Config, Open}).
//  3. One import line in internal/builtin.
//
// Exactly-once asks of a source: a Reader emits a barrier between two
// records, and its Position at that barrier is where it must resume after
// a restore, so that every record after the barrier is read again and none
// before it is.
package source
