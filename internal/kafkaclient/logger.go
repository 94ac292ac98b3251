package kafkaclient

import (
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logger writes franz-go's log lines as zerolog events (component
// "franz-go"), each key-value pair a field. franz-go logs a broker's
// connection, authentication and protocol problems there, which the
// errors returned to callers often shorten; info and debug are chatty
// (every metadata refresh), so warn is the level unless the job's logger
// is at debug.
type logger struct {
	log   zerolog.Logger
	level kgo.LogLevel
}

func newLogger(log zerolog.Logger) *logger {
	l := &logger{log: log.With().Str("component", "franz-go").Logger(), level: kgo.LogLevelWarn}
	if log.GetLevel() <= zerolog.DebugLevel {
		l.level = kgo.LogLevelDebug
	}
	return l
}

func (l *logger) Level() kgo.LogLevel { return l.level }

func (l *logger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var e *zerolog.Event
	switch level {
	case kgo.LogLevelError:
		e = l.log.Error()
	case kgo.LogLevelWarn:
		e = l.log.Warn()
	case kgo.LogLevelInfo:
		e = l.log.Info()
	default:
		e = l.log.Debug()
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		k, _ := keyvals[i].(string)
		if err, ok := keyvals[i+1].(error); ok {
			e = e.AnErr(k, err)
			continue
		}
		e = e.Interface(k, keyvals[i+1])
	}
	e.Msg(msg)
}
