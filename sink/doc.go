// Package sink defines how records leave the job exactly once: the Sink and
// Writer interfaces with their two-phase-commit lifecycle (sink.go), the
// error classes the runtime acts on (errors.go), and the registry of sink
// kinds (Kind, Register, New). A sink never reads its input and never
// decides when a checkpoint is complete: the runtime tells it.
//
// The kinds live in packages of their own: sink/file (exactly-once part
// files), sink/s3 (exactly-once objects in S3-compatible storage),
// sink/kafka (transactions), sink/postgres (one transaction per worker and
// checkpoint) and sink/stdout (at-least-once, for trying things out). The
// file and s3 sinks share how records are framed (sink/internal/recfmt),
// the formats of a file spanning checkpoints (sink/internal/filefmt:
// lines, Parquet) and path_template (sink/internal/pathtmpl).
//
// # Adding a sink
//
//  1. A package sink/<name> with a config struct for the sink: section:
//     `yaml` keys, `default` and `doc` tags, and a Validate method for what
//     the tags cannot say (package internal/spec). The config layer
//     decodes, defaults and validates it; `connector validate` then accepts
//     the kind, with file:line errors for its keys.
//  2. A type implementing Sink (and its Writer; AsyncPreCommitter,
//     Batcher and StatsReporter, for the job's metrics, are optional),
//     following the lifecycle on the interfaces.
//  3. In the package's init: Register(Kind{Name, Summary, Config, New}).
//  4. One import line in internal/builtin.
//  5. In the package doc, name the sink's decision record (the durable
//     fact that says checkpoint n's output is committed) and its fencing
//     (why a second process of the same job can never make output visible
//     twice); DESIGN.md, "Sinks".
//
// The runtime never switches over kinds: it calls New with the job's sink:
// section and drives the interfaces.
package sink
