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
// from; like Pebble's default logger, it does not return.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error().Str("from", "pebble").Msg(msg)
	panic("pebble: " + msg)
}
