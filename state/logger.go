package state

import (
	"fmt"

	"github.com/rs/zerolog"
)

// pebbleLogger routes Pebble's own log lines to zerolog.
type pebbleLogger struct{ log zerolog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug().Str("from", "pebble").Msgf(format, args...)
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error().Str("from", "pebble").Msgf(format, args...)
}

// Fatalf is called by Pebble on an invariant violation it cannot continue
// from; like Pebble's default logger, it does not return.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error().Str("from", "pebble").Msg(msg)
	panic("pebble: " + msg)
}
