package pipeline

import (
	"time"

	"github.com/rs/zerolog"
)

// slowCallWarning is how often a call that waits on an outside service
// (a sink's Recover at a restart, a checkpoint's commit) says it is still
// waiting.
const slowCallWarning = 10 * time.Second

// warnWhileSlow logs a warning every period until the returned done is
// called: "<what>: still waiting", with how long so far. A client that
// retries a service's answer forever (franz-go retries an EndTxn answered
// CONCURRENT_TRANSACTIONS, logging at debug) otherwise holds a restart or a
// checkpoint without a word. done returns once the warner has stopped: no
// warning is logged after it.
func warnWhileSlow(log zerolog.Logger, period time.Duration, what string) (done func()) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				log.Warn().Dur("waiting_ms", now.Sub(start)).Msg(what + ": still waiting")
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
	}
}
