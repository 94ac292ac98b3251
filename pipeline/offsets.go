package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/source"
)

// offsetCommitter commits completed checkpoints' source positions (Kafka:
// offsets to the consumer group) in the background, so a slow broker never
// holds up the driver. Only the newest submitted positions are kept: a
// commit of checkpoint n makes the commit of any older one pointless, so
// what waits is bounded to one checkpoint's.
type offsetCommitter struct {
	src     source.Source
	metrics *jobMetrics
	log     zerolog.Logger
	// fail reports an error no later commit repairs (source.ErrPermanent:
	// another live instance of the job, say); set before run starts.
	fail func(error)

	mu     sync.Mutex
	latest []source.Position
	wake   chan struct{}
	done   chan struct{}
}

func newOffsetCommitter(src source.Source, m *jobMetrics, log zerolog.Logger) *offsetCommitter {
	return &offsetCommitter{src: src, metrics: m, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// submit replaces the positions waiting to be committed.
func (c *offsetCommitter) submit(o []source.Position) {
	c.mu.Lock()
	c.latest = o
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *offsetCommitter) take() []source.Position {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.latest
	c.latest = nil
	return o
}

// run commits until ctx is done, then commits what is still waiting (with
// a short deadline of its own) and returns.
func (c *offsetCommitter) run(ctx context.Context) {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
			c.commit(ctx)
		case <-ctx.Done():
			c.commit(ctx)
			return
		}
	}
}

// commit commits the waiting offsets. A commit under way is finished even
// when ctx ends meanwhile, so the final checkpoint's offsets reach the group.
func (c *offsetCommitter) commit(ctx context.Context) {
	o := c.take()
	if len(o) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.src.Commit(cctx, o); err != nil {
		c.metrics.offsetCommitErrors.Inc()
		if errors.Is(err, source.ErrPermanent) && c.fail != nil {
			c.fail(err)
			return
		}
		c.log.Warn().Err(err).Msg("committing checkpoint positions to the source failed; the next checkpoint retries")
	}
}
