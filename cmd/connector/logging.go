package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
)

// logFlags are --log-level and --log-format, which win over the config's
// log.level and log.format when given.
type logFlags struct {
	fs     *flag.FlagSet
	level  *string
	format *string
}

// addLogFlags adds --log-level and --log-format to fs. defaultLevel, if
// not "", is the level when neither the flag nor the file gives one, in
// place of log.level's own default.
func addLogFlags(fs *flag.FlagSet, defaultLevel string) *logFlags {
	what := "info"
	if defaultLevel != "" {
		what = defaultLevel
	}
	return &logFlags{
		fs:     fs,
		level:  fs.String("log-level", defaultLevel, "log `level`: debug, info, warn, error (default: the config's log.level, else "+what+")"),
		format: fs.String("log-format", "", "log `format`: json or console (default: the config's log.format, else console on a terminal, json otherwise)"),
	}
}

// logger returns the process's logger for job's log: keys, with the flags
// given on the command line winning over them. A bad flag value is printed
// to w and ok is false (exit 2).
func (lf *logFlags) logger(job *config.Job, w io.Writer) (log zerolog.Logger, ok bool) {
	level, format := job.Log.Level, job.Log.Format
	switch {
	case lf.given("log-level"):
		level = *lf.level
	case *lf.level != "" && !job.Given("log.level"):
		level = *lf.level // the command's own default
	}
	if lf.given("log-format") {
		format = config.LogFormat(*lf.format)
	}
	if !slices.Contains(config.LogLevels, level) {
		fmt.Fprintf(w, "connector: --log-level %q: want debug, info, warn or error\n", level)
		return zerolog.Nop(), false
	}
	if format != config.LogAuto && !slices.Contains(format.Enum(), string(format)) {
		fmt.Fprintf(w, "connector: --log-format %q: want json or console\n", format)
		return zerolog.Nop(), false
	}
	return newLogger(level, format, w), true
}

func (lf *logFlags) given(name string) bool {
	found := false
	lf.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// newLogger logs to w, one event per line with its timestamp: JSON
// objects, or zerolog's console lines (colours only on a terminal). The
// automatic format is console on a terminal, JSON otherwise (a pipe, a
// file, a container's log). level must be one of config.LogLevels.
func newLogger(level string, format config.LogFormat, w io.Writer) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		panic("connector: log level " + level + " was not validated")
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	tty := terminal(w)
	if format == config.LogConsole || (format == config.LogAuto && tty) {
		w = zerolog.ConsoleWriter{Out: w, NoColor: !tty, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// terminal reports whether w is a terminal.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
