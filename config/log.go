package config

import "github.com/connector-dev/connector/internal/spec"

// Log is how the process logs: zerolog events to stderr, one per line.
// The command line's --log-level and --log-format, when given, win over
// these keys.
type Log struct {
	// Format is json (one JSON object per line, for collectors), console
	// (aligned, human-readable) or empty: console when stderr is a
	// terminal, else json.
	Format LogFormat `yaml:"format,omitempty" doc:"json | console; default: console on a terminal, else json"`
	Level  string    `yaml:"level" default:"info" enum:"debug,info,warn,error" doc:"debug | info | warn | error"`
}

// LogFormat is the shape of log lines.
type LogFormat string

// Log formats.
const (
	LogAuto    LogFormat = ""        // console on a terminal, else json
	LogJSON    LogFormat = "json"    // one JSON object per line
	LogConsole LogFormat = "console" // zerolog's console writer, no colours off a terminal
)

// Enum lists the values a file may give (for the JSON Schema).
func (LogFormat) Enum() []string { return []string{string(LogJSON), string(LogConsole)} }

// LogLevels are the levels log.level and --log-level take.
var LogLevels = []string{"debug", "info", "warn", "error"}

// Validate checks the format and the level.
func (l *Log) Validate(p *Problems) {
	if l.Format != LogAuto {
		spec.OneOf(p, "format", "log format", l.Format, LogJSON, LogConsole)
	}
	spec.OneOf(p, "level", "log level", l.Level, LogLevels...)
}
