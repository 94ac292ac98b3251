package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/sink"
	"github.com/connector-dev/connector/source"
)

// errPermanent marks failures a restart cannot fix (the job exits at once).
var errPermanent = errors.New("permanent failure")

// permanent reports whether err is one a restart cannot fix: errPermanent,
// or the classes the source and sink give such errors.
func permanent(err error) bool {
	return errors.Is(err, errPermanent) || errors.Is(err, source.ErrPermanent) || errors.Is(err, sink.ErrInUse) || errors.Is(err, sink.ErrInvalidConfig)
}

// attempt is one run of the job from its last completed checkpoint (DESIGN,
// "Restart"): everything it opens it closes before it returns. Its phases,
// in order, each in its own file:
//
//  1. restore (restore.go): the checkpoint store, the checkpoint to
//     restore, the sink recovered from it, the workers' keyed state, the
//     source opened at its positions, the dead-letter producer;
//  2. build (graph.go): channels, Coordinator, aligners, workers, driver;
//  3. start and drive (this file): a goroutine per task, and the driver's
//     loop on this one, until the job fails or stops.
type attempt struct {
	j        *Job
	closers  []func() // run in reverse order on exit
	progress bool     // a checkpoint completed during this attempt
	started  bool     // the tasks ran
}

func (a *attempt) defer_(f func()) { a.closers = append(a.closers, f) }

func (a *attempt) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// run restores the job and runs it until it fails, ctx ends, or stop is
// closed and a final checkpoint completed (then it returns nil).
func (a *attempt) run(ctx context.Context, stop <-chan struct{}) error {
	defer a.close()
	r, err := a.restore(ctx, stop)
	if err != nil {
		return err
	}
	g, err := a.build(r)
	if err != nil {
		return err
	}
	a.start(ctx, g)
	j, cfg := a.j, a.j.cfg
	j.setRunning(r.source, g.driver)
	a.started = true
	defer j.setRunning(nil, nil)
	j.log.Info().Int("parallelism", cfg.Pipeline.Parallelism).Bool("stateful", r.stateful).Msg("job running")
	return g.driver.loop(ctx, stop, tickPeriod(cfg.Checkpoint.Interval, cfg.Checkpoint.Timeout), cfg.Checkpoint.Timeout)
}

// start runs every task on a goroutine of its own; a task that fails
// reports TaskFailed to the driver. They stop when the attempt closes,
// before anything they use is closed.
func (a *attempt) start(ctx context.Context, g *graph) {
	tctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	a.defer_(func() { cancel(); wg.Wait() })
	fail := func(t task, err error) {
		if err != nil && tctx.Err() == nil {
			_ = sendEvent(tctx, g.events, checkpoint.TaskFailed{Task: t.ID(), Err: err})
		}
	}
	for i, r := range g.readers {
		em := g.emitters[i]
		wg.Go(func() { fail(em.task, r.Run(tctx, em)) })
	}
	for _, w := range g.workers {
		wg.Go(func() { fail(w.task, w.run(tctx)) })
	}
	g.driver.offsets.fail = func(err error) { fail(task{sourceTask, 0}, err) }
	wg.Go(func() { g.driver.offsets.run(tctx) })
	wg.Go(func() { fail(task{sourceTask, 0}, g.source.Run(tctx)) })
}

// tickPeriod ticks the Coordinator ten times per interval (or timeout, if
// shorter), between 5ms and 100ms.
func tickPeriod(interval, timeout time.Duration) time.Duration {
	return min(max(min(interval, timeout)/10, 5*time.Millisecond), 100*time.Millisecond)
}
