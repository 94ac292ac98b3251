package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Retry is how a sink waits for its system: Do runs fn until it returns
// nil or an error that is not of class Unreachable, backing off from
// 200 ms to 10 s and logging each retry, until ctx ends.
type Retry struct {
	Log zerolog.Logger
	// Name and System say who waits for what in the logs and errors
	// ("kafka sink", "cluster").
	Name, System string
	// Unreachable is the class of the errors retried.
	Unreachable error
	// BeforeWait, if not nil, runs before each wait (a sink drops a
	// connection it no longer trusts).
	BeforeWait func()
}

// Do retries fn; what says when ("at start", "while committing ...").
func (r Retry) Do(ctx context.Context, what string, fn func() error) error {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !errors.Is(err, r.Unreachable) {
			return err
		}
		if ctx.Err() != nil { // fn's error may be the echo of ctx's end: said as such
			return fmt.Errorf("%s: %s: %w (last error: %w)", r.Name, what, ctx.Err(), err)
		}
		if r.BeforeWait != nil {
			r.BeforeWait()
		}
		r.Log.Warn().Err(err).Int("attempt", attempt).Dur("backoff_ms", backoff).Msgf("%s: %s unreachable %s; retrying", r.Name, r.System, what)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s: %w (last error: %w)", r.Name, what, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
