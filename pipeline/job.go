package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/source"
)

// Options are what a Job takes besides its config. Zero values are fine.
type Options struct {
	// FS is the filesystem of the checkpoint store and the file sink;
	// nil means the OS. Tests inject failures through it.
	FS vfs.FS
	// Registry receives the job's metrics, registered once by New (one
	// Job per registry); nil makes a private one. Serve it with promhttp
	// (package httpapi).
	Registry *prometheus.Registry
	Log      zerolog.Logger
	// DiscoverEvery is how often the source looks for new input
	// (partitions); 0 is the source kind's default.
	DiscoverEvery time.Duration
	// Stdout is where the stdout sink prints; nil means os.Stdout.
	Stdout io.Writer
	// Slot, if not nil, makes the job one slot of a job run in group mode
	// (package group): its source reads only the slot's partitions.
	Slot *source.Slot
}

// Job runs one configured job: attempts from the last completed checkpoint,
// restarted with exponential backoff after a failure, until it is stopped or
// fails restart.max_failures times in a row.
type Job struct {
	cfg           *config.Job
	fs            vfs.FS
	log           zerolog.Logger
	metrics       *jobMetrics
	discoverEvery time.Duration
	stdout        io.Writer
	slot          *source.Slot
	spawn         func(func())   // runs a snapshot's asynchronous part
	rand          func() float64 // the Coordinator's randomness (initial delay)
	health        health
	history       history
	last          atomic.Pointer[Completion]
	// stopping: Run was asked to stop (its final checkpoint is under
	// way); stopped: Run returned. For JobInfo.State.
	stopping, stopped atomic.Bool
	// sinkReached: a sink of this job reached its system once (sink.Env).
	sinkReached atomic.Bool
	// deadLetterReached: the same, of the dead-letter topic's
	// transactional sink (deadletter_txn.go).
	deadLetterReached atomic.Bool
}

// New prepares a job; cfg must have been validated (config.Load does).
func New(cfg *config.Job, opts Options) *Job {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	j := &Job{
		cfg: cfg, fs: opts.FS, log: opts.Log.With().Str("job", cfg.Name).Logger(),
		metrics: newJobMetrics(opts.Registry), discoverEvery: opts.DiscoverEvery, stdout: opts.Stdout, slot: opts.Slot,
		spawn: func(f func()) { go f() }, rand: rand.Float64,
	}
	j.health.recordsIn = func() int64 { return int64(counterValue(j.metrics.recordsIn)) }
	j.metrics.interval.Set(cfg.Checkpoint.Interval.Seconds())
	j.metrics.timeout.Set(cfg.Checkpoint.Timeout.Seconds())
	return j
}

// ErrTooManyFailures: the job failed restart.max_failures times in a row.
var ErrTooManyFailures = errors.New("job failed too many times in a row")

// Run runs the job until ctx is done. Then it waits for a checkpoint
// triggered after that moment to complete and be committed, and returns nil
// (SIGTERM semantics of the contract). It returns an error when the job
// failed too many times in a row, hit a failure no restart can fix, or could
// not finish its final checkpoint.
func (j *Job) Run(ctx context.Context) error {
	// The attempt keeps running while it takes the final checkpoint, so it
	// gets a context of its own; ctx only asks it to stop.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer j.stopped.Store(true)
	stop := context.AfterFunc(ctx, func() { j.stopping.Store(true) })
	defer stop()
	failures := 0
	backoff := j.cfg.Restart.InitialBackoff
	for {
		a := &attempt{j: j}
		err := a.run(actx, ctx.Done())
		if err == nil {
			j.log.Info().Msg("job stopped after its final checkpoint")
			return nil
		}
		if permanent(err) || errors.Is(err, errFinalCheckpoint) {
			return err
		}
		if ctx.Err() != nil && !a.started {
			j.log.Info().Err(err).Msg("stopped before the job started")
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped while failing: %w", err)
		}
		if a.progress {
			failures, backoff = 0, j.cfg.Restart.InitialBackoff
		}
		failures++
		if failures >= j.cfg.Restart.MaxFailures {
			return fmt.Errorf("%w (%d): last error: %w", ErrTooManyFailures, failures, err)
		}
		j.metrics.restarts.Inc()
		j.log.Error().Err(err).Int("failures", failures).Dur("backoff_ms", backoff).Msg("job failed; restarting from the last completed checkpoint")
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while failing: %w", err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, j.cfg.Restart.MaxBackoff)
	}
}

// Status is what /api/checkpoints shows about the running job: readiness
// and liveness with their reasons, the last completed checkpoint, the
// counts by outcome and the history of the last checkpoints, newest first.
type Status struct {
	Ready         bool               `json:"ready"`
	NotReady      string             `json:"not_ready,omitempty"` // why, when not ready
	Live          bool               `json:"live"`
	NotLive       string             `json:"not_live,omitempty"` // why /healthz fails
	LastCompleted *Completion        `json:"last_completed,omitempty"`
	Counts        Counts             `json:"counts"`
	History       []CheckpointRecord `json:"history"`
}

// Completion describes the last completed checkpoint.
type Completion struct {
	ID          uint64    `json:"id"`
	TriggeredAt time.Time `json:"triggered_at"`
	CompletedAt time.Time `json:"completed_at"`
	Offsets     string    `json:"offsets"`
	Tasks       int       `json:"tasks"`
}

// Status returns the job's current status; safe from any goroutine.
func (j *Job) Status() Status {
	st := Status{Ready: true, Live: true, LastCompleted: j.last.Load()}
	if err := j.Ready(); err != nil {
		st.Ready, st.NotReady = false, err.Error()
	}
	if err := j.Live(); err != nil {
		st.Live, st.NotLive = false, err.Error()
	}
	st.History, st.Counts = j.history.snapshot()
	return st
}
