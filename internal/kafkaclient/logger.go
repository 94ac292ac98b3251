package kafkaclient

import (
	"bytes"
	"encoding/json"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logger writes franz-go's log lines as zerolog events (component
// "franz-go"), each key-value pair a field. franz-go logs a broker's
// connection, authentication and protocol problems there, which the
// errors returned to callers often shorten; info and debug are chatty
// (every metadata refresh), so warn is the level unless the job's logger
// is at debug. A franz-go key that the job's logger already carries (a
// sink's "topic", say) is written as "kafka_<key>", so that every line
// stays a JSON object with unique keys.
type logger struct {
	log   zerolog.Logger
	level kgo.LogLevel
	taken map[string]bool
}

func newLogger(log zerolog.Logger) *logger {
	l := &logger{log: log.With().Str("component", "franz-go").Logger(), level: kgo.LogLevelWarn}
	l.taken = contextKeys(l.log)
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
		if l.taken[k] {
			k = "kafka_" + k
		}
		if err, ok := keyvals[i+1].(error); ok {
			e = e.AnErr(k, err)
			continue
		}
		e = e.Interface(k, keyvals[i+1])
	}
	e.Msg(msg)
}

// contextKeys returns the keys every event of log carries (its context
// fields, plus the level, time and message keys), found by writing one
// level-less event into a buffer.
func contextKeys(log zerolog.Logger) map[string]bool {
	taken := map[string]bool{
		zerolog.LevelFieldName: true, zerolog.TimestampFieldName: true,
		zerolog.MessageFieldName: true,
	}
	var buf bytes.Buffer
	probe := log.Output(&buf)
	probe.Log().Msg("")
	var fields map[string]json.RawMessage
	if json.Unmarshal(buf.Bytes(), &fields) == nil {
		for k := range fields {
			taken[k] = true
		}
	}
	return taken
}
