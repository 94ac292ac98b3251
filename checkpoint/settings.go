package checkpoint

import (
	"fmt"
	"time"
)

// Mode is the processing guarantee. The Coordinator only carries it; Aligners
// act on it.
type Mode uint8

const (
	// ExactlyOnce aligns barriers: a channel is blocked from its barrier n
	// until every live channel delivered barrier n.
	ExactlyOnce Mode = iota
	// AtLeastOnce never blocks a channel: the task snapshots when the last
	// live channel's barrier n arrives, and records keep flowing meanwhile,
	// so a restored job may replay some records twice.
	AtLeastOnce
)

// String returns the mode's spelling in the config file.
func (m Mode) String() string {
	switch m {
	case ExactlyOnce:
		return "exactly_once"
	case AtLeastOnce:
		return "at_least_once"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses the config file's spelling: "exactly_once" or
// "at_least_once".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "exactly_once":
		return ExactlyOnce, nil
	case "at_least_once":
		return AtLeastOnce, nil
	}
	return 0, fmt.Errorf("%w: checkpoint.mode: want exactly_once or at_least_once, got %q", ErrInvalidSettings, s)
}

// Settings configure a Coordinator. Start from DefaultSettings, change what the
// config sets, and let NewCoordinator call Validate. The field comments name the
// YAML keys under checkpoint:.
type Settings struct {
	// Interval (interval) is the base period: checkpoint n+1 is due Interval
	// after checkpoint n was triggered.
	Interval time.Duration
	// InitialDelayMax bounds the random delay before the first checkpoint:
	// the first one is due Rand()*InitialDelayMax after the first Tick, so
	// that jobs started together do not checkpoint in lockstep.
	InitialDelayMax time.Duration
	// Rand returns a number in [0, 1). It is the only randomness the
	// Coordinator uses; the runtime passes rand.Float64, tests a fixed or
	// seeded source. Nil means 0: no initial delay.
	Rand func() float64
	// MinPause (min_pause) is the least time between a checkpoint completing
	// and the next one being triggered. The Coordinator knows time only from
	// ticks: a completion happens at the time of the latest Tick.
	MinPause time.Duration
	// Timeout (timeout): a checkpoint not acknowledged by every task within
	// Timeout of being triggered is aborted with ErrExpired. Once every task
	// acknowledged it, it no longer expires: its fate is the persist's.
	Timeout time.Duration
	// MaxConcurrent (max_concurrent) bounds the checkpoints pending at once
	// (triggered and neither completed nor aborted). A due checkpoint waits
	// for a free slot.
	MaxConcurrent int
	// TolerableFailures is how many checkpoints in a row may fail before the
	// Coordinator fails the job. Failures are declines, timeouts and
	// metadata persist failures; subsumption and cancellation are not
	// failures. A completed checkpoint resets the count. 0 fails the job on
	// the first failed checkpoint.
	TolerableFailures int
	// Retained (retained) is how many completed checkpoints the store keeps.
	// The Coordinator does not act on it (retention and deleting the files
	// that fall out of it belong to the store); it is here so that one
	// struct carries the checkpoint: section and validates it once.
	Retained int
	// Mode (mode) is passed on to the aligners; see Mode.
	Mode Mode
}

// DefaultSettings returns the defaults: the values config.yaml documents.
func DefaultSettings() Settings {
	return Settings{
		Interval:          time.Second,
		InitialDelayMax:   time.Second,
		MinPause:          0,
		Timeout:           time.Minute,
		MaxConcurrent:     1,
		TolerableFailures: 3,
		Retained:          3,
		Mode:              ExactlyOnce,
	}
}

// Validate reports the first value that is out of range, naming its YAML key.
// The error wraps ErrInvalidSettings.
func (s Settings) Validate() error {
	bad := func(key, want string, got any) error {
		return fmt.Errorf("%w: checkpoint.%s: must be %s, got %v", ErrInvalidSettings, key, want, got)
	}
	switch {
	case s.Interval <= 0:
		return bad("interval", "positive", s.Interval)
	case s.InitialDelayMax < 0:
		return bad("initial_delay", "zero or positive", s.InitialDelayMax)
	case s.MinPause < 0:
		return bad("min_pause", "zero or positive", s.MinPause)
	case s.Timeout <= 0:
		return bad("timeout", "positive", s.Timeout)
	case s.MaxConcurrent < 1:
		return bad("max_concurrent", "at least 1", s.MaxConcurrent)
	case s.TolerableFailures < 0:
		return bad("tolerable_failures", "zero or positive", s.TolerableFailures)
	case s.Retained < 1:
		return bad("retained", "at least 1", s.Retained)
	case s.Mode != ExactlyOnce && s.Mode != AtLeastOnce:
		return bad("mode", "exactly_once or at_least_once", s.Mode)
	}
	return nil
}
