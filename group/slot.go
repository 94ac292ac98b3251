package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint/store"
	"github.com/connector-dev/connector/config"
	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/internal/fsutil"
	"github.com/connector-dev/connector/pipeline"
	"github.com/connector-dev/connector/source"
)

// slot is one slot this member was given: its lock, then its job.
//
// Lifecycle: newSlot, then run on a goroutine of its own (returns when
// stopped, or when the job failed for good); stop from any goroutine,
// once, returns after run did.
type slot struct {
	k       int
	m       *Member
	cfg     *config.Job
	log     zerolog.Logger
	reg     *prometheus.Registry // the slot's job's metrics
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	since   time.Time                    // when the group assigned it
	job     atomic.Pointer[pipeline.Job] // nil until the lock is taken
	waiting atomic.Bool                  // the lock is held by another process
}

func newSlot(m *Member, k int) *slot {
	ctx, cancel := context.WithCancel(context.Background())
	return &slot{
		k: k, m: m, cfg: SlotConfig(m.cfg, k), log: m.log.With().Int("slot", k).Logger(),
		reg: prometheus.NewRegistry(), ctx: ctx, cancel: cancel, done: make(chan struct{}), since: time.Now(),
	}
}

// SlotConfig is the config of slot k's job: the job's, renamed
// <name>.slot-<k>, with directories of its own under checkpoint.dir and
// state.dir, in single mode.
func SlotConfig(j *config.Job, k int) *config.Job {
	c := *j
	c.Name = SlotName(j.Name, k)
	c.Checkpoint.Dir = filepath.Join(j.Checkpoint.Dir, slotDir(k))
	c.State.Dir = filepath.Join(j.State.Dir, slotDir(k))
	c.Instances.Mode = config.InstancesSingle
	return &c
}

// SlotName is the name of slot k's job.
func SlotName(job string, k int) string { return fmt.Sprintf("%s.slot-%d", job, k) }

func slotDir(k int) string { return fmt.Sprintf("slot-%d", k) }

// lockPath is slot k's lock file, beside its checkpoint directory.
func lockPath(j *config.Job, k int) string {
	return filepath.Join(j.Checkpoint.Dir, slotDir(k)+".lock")
}

// LockPath is slot k's lock file of group-mode job j: the commands that
// open a slot's checkpoint store take it first, as a member does.
func LockPath(j *config.Job, k int) string { return lockPath(j, k) }

// run takes the slot's lock (waiting for the previous owner to release
// it), then runs its job until stopped.
func (s *slot) run() {
	defer close(s.done)
	lock, err := s.lock()
	if err != nil {
		if s.ctx.Err() == nil {
			s.m.failed(s.k, err)
		}
		return
	}
	defer func() { _ = lock.Close() }()
	job := pipeline.New(s.cfg, pipeline.Options{
		Registry: s.reg, Log: s.m.base, // the job's logger adds job=<name>.slot-<k>
		Slot: &source.Slot{Index: s.k, Of: s.m.cfg.Instances.Slots},
	})
	s.job.Store(job)
	go s.timeAcquire(job)
	s.log.Info().Dur("waited_ms", time.Since(s.since)).Msg("slot locked: starting its job")
	err = job.Run(s.ctx)
	switch {
	case err == nil:
	case s.ctx.Err() != nil && !s.m.isClosing():
		// Handed over: the next owner restores the last completed
		// checkpoint, and the sinks' recovery settles the rest.
		s.log.Warn().Err(err).Msg("the slot's job ended with an error while it was stopped")
	default:
		s.m.failed(s.k, err)
	}
}

// lockRetry is how often a slot whose lock another process holds tries
// again.
const lockRetry = 100 * time.Millisecond

// lock takes the slot's lock, retrying while another process holds it,
// until the slot is stopped.
func (s *slot) lock() (io.Closer, error) {
	name := lockPath(s.m.cfg, s.k)
	if err := fsutil.MkdirAll(vfs.Default, filepath.Dir(name)); err != nil {
		return nil, err
	}
	t := time.NewTicker(lockRetry)
	defer t.Stop()
	for {
		l, err := store.Lock(vfs.Default, name)
		if err == nil {
			s.waiting.Store(false)
			return l, nil
		}
		if !errors.Is(err, store.ErrLocked) {
			return nil, err
		}
		if !s.waiting.Swap(true) {
			s.log.Info().Str("lock", name).Msg("waiting for the slot's previous owner to release it (still stopping it, or paused)")
		}
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-t.C:
		}
	}
}

// timeAcquire observes how long the slot took from its assignment to a
// ready job (restored, its source positioned), unless it stops first.
func (s *slot) timeAcquire(job *pipeline.Job) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if job.Ready() == nil {
				d := time.Since(s.since)
				s.m.metrics.handover.WithLabelValues("acquire").Observe(d.Seconds())
				s.log.Info().Dur("took_ms", d).Msg("slot ready")
				return
			}
		}
	}
}

// stop asks the slot's job to stop (its final checkpoint) and waits until
// run returned: the lock is released.
func (s *slot) stop() {
	s.cancel()
	<-s.done
}

// state is how Info shows the slot.
func (s *slot) state() string {
	select {
	case <-s.done:
		return "stopped"
	default:
	}
	switch {
	case s.ctx.Err() != nil:
		return "stopping"
	case s.job.Load() == nil:
		return "waiting for its lock"
	default:
		return s.job.Load().State()
	}
}

// ErrRanInGroupMode: a single-mode process was started on the directories
// of a job that ran in group mode.
var ErrRanInGroupMode = errors.New("the job ran in group mode on these directories")

// RefuseSingle returns an error classed ErrRanInGroupMode when
// checkpoint.dir holds slots of the job (it ran in group mode): a
// single-mode process would restore its own older checkpoint, or none,
// and write again what the slots wrote since.
func RefuseSingle(j *config.Job) error {
	entries, err := os.ReadDir(j.Checkpoint.Dir)
	if err != nil {
		return nil // none yet (or unreadable: the store says so)
	}
	var slots []string
	for _, e := range entries {
		if k, ok := strings.CutPrefix(e.Name(), "slot-"); ok && e.IsDir() && k != "" && strings.Trim(k, "0123456789") == "" {
			slots = append(slots, e.Name())
		}
	}
	if len(slots) == 0 {
		return nil
	}
	// The config's fault (cmd/connector exits 2 at instances.mode's line).
	return cfgkey.Wrap("instances.mode", fmt.Errorf("%w: checkpoint.dir %s holds its slots (%s): run it with instances.mode: group, or give a single-mode job directories of its own (restoring its own older checkpoint, it would write again what the slots wrote since)",
		ErrRanInGroupMode, j.Checkpoint.Dir, strings.Join(slots, ", ")))
}
