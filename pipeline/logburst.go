package pipeline

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// logBurst bounds a warning that a stream of records can raise once each
// (a skipped record, a dead letter cut to fit): the first burstLines of a
// burstWindow are logged one by one, with the record's place; the rest are
// counted, and one line says how many there were, and where the last one
// was, once the window is over (at the next such record, or the next
// barrier, whichever comes first). The metrics count every one. So a
// producer's bug that makes every record bad does not make the log follow
// the topic's rate. Safe for concurrent use (the workers share it).
type logBurst struct {
	msg string           // the warning's message; the summary's says "more" of them
	now func() time.Time // nil: time.Now

	mu         sync.Mutex
	start      time.Time // of the current window
	logged     int       // lines logged in it
	suppressed int       // records not logged in it
	last       place     // the last one not logged
}

type place struct {
	topic     string
	partition int32
	offset    int64
}

const (
	burstLines  = 10
	burstWindow = time.Minute
)

// allow reports whether the warning for the record at p is logged; if not,
// it is counted. It first says what the window before suppressed, if over.
func (b *logBurst) allow(log zerolog.Logger, p place) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roll(log, b.clock())
	if b.logged < burstLines {
		b.logged++
		return true
	}
	b.suppressed++
	b.last = p
	return false
}

// tick says what an ended window suppressed; the runtime calls it at every
// barrier, so that a burst is summed up even when no record follows it.
func (b *logBurst) tick(log zerolog.Logger) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roll(log, b.clock())
}

func (b *logBurst) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

func (b *logBurst) roll(log zerolog.Logger, now time.Time) {
	if now.Sub(b.start) < burstWindow {
		return
	}
	if b.suppressed > 0 {
		log.Warn().Int("more", b.suppressed).Dur("window_ms", burstWindow).
			Str("last_topic", b.last.topic).Int32("last_partition", b.last.partition).Int64("last_offset", b.last.offset).
			Msg(b.msg + " (more of them, not logged one by one: the metrics count every one)")
	}
	b.start, b.logged, b.suppressed = now, 0, 0
}
