package state

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// pebbleLogger routes Pebble's own log lines to zerolog. Error lines are
// limited to errorBurst a second: with the disk full Pebble retries a
// failed flush thousands of times a second and logs every failure.
type pebbleLogger struct {
	log, errs zerolog.Logger
}

const errorBurst = 5

func newPebbleLogger(log zerolog.Logger) pebbleLogger {
	return pebbleLogger{log: log, errs: log.Sample(&zerolog.BurstSampler{Burst: errorBurst, Period: time.Second})}
}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug().Str("from", "pebble").Msgf(format, args...)
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.errs.Error().Str("from", "pebble").Msgf(format, args...)
}

// Fatalf is called by Pebble on an invariant violation it cannot continue
// from; like Pebble's default logger, it does not return: it panics with a
// pebbleFatal. Pebble also calls it when it cannot write its MANIFEST (a
// full disk) while it opens a database: openPebble turns that one into an
// error.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error().Str("from", "pebble").Msg(msg)
	panic(pebbleFatal("pebble: " + msg))
}

// pebbleFatal is the value Fatalf panics with.
type pebbleFatal string

func (f pebbleFatal) Error() string { return string(f) }
