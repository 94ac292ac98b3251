// Package config loads a job's YAML file into plain structs, once, at start.
//
// It owns:
//
//   - reading the file into a yaml.Node, so every key keeps its line;
//   - ${VAR} and ${VAR:-default} interpolation in every scalar value, done
//     before type conversion, so numbers and durations can come from the
//     environment too;
//   - defaults, filled in one place (defaults.go);
//   - validation, done once, with every problem reported as an *Error that
//     names the file, the line and the key ("config.yaml:12:
//     checkpoint.interval: "5 seconds" is not a duration");
//   - secrets (Secret), which never print, and Dump, the effective config with
//     secrets redacted.
//
// It does not own what the settings mean at run time: the pipeline, source,
// sinks and transforms read the structs and act on them. It prints nothing and
// starts nothing; problems are returned as values.
//
// Use:
//
//	job, err := config.Load("config.yaml") // decode, interpolate, default, validate
//	var errs config.Errors
//	if errors.As(err, &errs) { ... } // one *Error per problem, in line order
//
// A Job built in code (tests) gets the same defaults and checks through
// FillDefaults and Validate; there, a zero field counts as unset.
//
// Rules of the YAML file:
//
//   - Unknown keys are errors (with the closest known key suggested).
//   - An empty value (null, "" or a variable that expands to "") means "use the
//     default".
//   - Durations use Go syntax (500ms, 1s, 5m, 1h30m); byte sizes take an
//     optional unit (B, KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in
//     powers of 1024), e.g. 64MiB.
//   - Relative paths (checkpoint.dir, state.dir, sink.path) are relative to
//     the working directory, not to the config file.
//   - ${VAR:-default} gives default when VAR is unset or empty; the default
//     is itself interpolated, like a shell's: ${STATE_DIR:-${HOME}/state}
//     (nested at most 10 deep). Its braces pair up, so the first unpaired
//     "}" ends it. ${VAR} with VAR unset, and a "${" without its "}", are
//     errors. A variable's value is not interpolated again.
//   - "$${" writes a literal "${"; any other "$" is literal.
//   - A list of strings may be written as a single string; kafka.brokers
//     entries are also split on commas, so KAFKA_BROKERS=a:9092,b:9092 works.
//   - Every number has an upper bound, stated by the Validate method of the
//     struct that holds it (pipeline.parallelism at most 256, durations of
//     checkpoint: at most 7 days, ...). Ports are numbers (0 to 65535;
//     brokers from 1); topic names follow Kafka's rules (1 to 249 of
//     [a-zA-Z0-9._-], not "." or ".."); the job name is 1 to 100 of
//     [a-zA-Z0-9._-], starting with a letter or a digit.
//
// Limits on the file itself (limits.go), checked before anything is
// decoded, so that Load returns quickly whatever the file holds: at most
// 1MiB; with YAML aliases expanded, at most 100 levels of nesting and
// 50,000 values; no alias inside the value its anchor names. Each is one
// *Error at the line of the alias (or value) that crosses it. At most 100
// problems are listed; a last *Error counts the rest.
package config
