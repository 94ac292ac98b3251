package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/syncbuf"
)

// A burst of bad records logs its first burstLines one by one, and the
// rest in one line once its window is over: at the next record after it,
// or at the next barrier (tick) when none follows. A new window logs one
// by one again.
func TestLogBurstLogsTheFirstAndSumsUpTheRest(t *testing.T) {
	var buf syncbuf.Buffer
	log := zerolog.New(&buf)
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	b := &logBurst{msg: "skipping", now: func() time.Time { return now }}
	allowed := 0
	for i := range 1000 {
		if b.allow(log, place{"orders", 3, int64(i)}) {
			allowed++
		}
	}
	if allowed != burstLines {
		t.Errorf("%d of 1000 allowed in one window, want %d", allowed, burstLines)
	}
	b.tick(log) // within the window: nothing yet
	if got := buf.Count("more of them"); got != 0 {
		t.Errorf("%d summaries before the window ended", got)
	}
	now = now.Add(burstWindow)
	b.tick(log)
	out := buf.String()
	if got := buf.Count("more of them"); got != 1 || !strings.Contains(out, `"more":990`) || !strings.Contains(out, `"last_offset":999`) || !strings.Contains(out, `"last_partition":3`) {
		t.Errorf("after the window: %d summaries, want one of 990 more, last at orders/3@999:\n%s", got, out)
	}
	if !b.allow(log, place{"orders", 3, 1000}) {
		t.Error("the first record of a new window is not logged")
	}
	now = now.Add(2 * burstWindow)
	b.tick(log)
	if got := buf.Count("more of them"); got != 1 {
		t.Errorf("a window that suppressed nothing wrote a summary (%d in all)", got)
	}
}
