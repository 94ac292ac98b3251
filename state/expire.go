package state

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rs/zerolog"
)

// compactGap is the least time between two compactions of expired ranges:
// a transform may expire many times a second (record time runs faster than
// the clock in a backlog), and each compaction covers every expiry before it.
const compactGap = time.Second

// compactor compacts the ranges the Store expired, in the background, one
// compaction at a time. Pebble compacts L0 late (see open), so without it the
// data of expired keys would stay on disk until enough newer files piled up
// on top of it; a compaction of a range that a range deletion covers writes
// (almost) nothing and frees its files.
type compactor struct {
	db  *pebble.DB
	log zerolog.Logger

	mu      sync.Mutex
	lo, hi  []byte // the pending range; nil: none
	running bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newCompactor(db *pebble.DB, log zerolog.Logger) *compactor {
	ctx, cancel := context.WithCancel(context.Background())
	return &compactor{db: db, log: log, ctx: ctx, cancel: cancel}
}

// add asks for [lo, hi) to be compacted, with whatever is pending.
func (c *compactor) add(lo, hi []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lo == nil {
		c.lo, c.hi = bytes.Clone(lo), bytes.Clone(hi)
	} else {
		if bytes.Compare(lo, c.lo) < 0 {
			c.lo = bytes.Clone(lo)
		}
		if bytes.Compare(hi, c.hi) > 0 {
			c.hi = bytes.Clone(hi)
		}
	}
	if !c.running {
		c.running = true
		c.wg.Add(1)
		go c.run()
	}
}

func (c *compactor) run() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		lo, hi := c.lo, c.hi
		c.lo, c.hi = nil, nil
		if lo == nil || c.ctx.Err() != nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if err := c.db.Compact(c.ctx, lo, hi, false); err != nil && c.ctx.Err() == nil {
			// Only space is at stake: the keys are deleted either way.
			c.log.Warn().Err(err).Msg("compaction of expired state failed; its space is freed by later compactions")
		}
		select {
		case <-c.ctx.Done():
		case <-time.After(compactGap):
		}
	}
}

// stop cancels a running compaction and waits for it to end.
func (c *compactor) stop() {
	c.cancel()
	c.wg.Wait()
}
