package checkpoint

import (
	"fmt"
	"math"
	"time"

	"github.com/connector-dev/connector/internal/spec"
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

// Enum lists the spellings of the modes in the config file.
func (Mode) Enum() []string { return []string{ExactlyOnce.String(), AtLeastOnce.String()} }

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

// UnmarshalText parses the config file's spelling.
func (m *Mode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "exactly_once":
		*m = ExactlyOnce
	case "at_least_once":
		*m = AtLeastOnce
	default:
		return fmt.Errorf("unknown mode %q (want exactly_once or at_least_once)", b)
	}
	return nil
}

// MarshalText writes the config file's spelling.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMode parses the config file's spelling: "exactly_once" or
// "at_least_once".
func ParseMode(s string) (Mode, error) {
	var m Mode
	if err := m.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%w: checkpoint.mode: %w", ErrInvalidSettings, err)
	}
	return m, nil
}

// Config is the checkpoint: section of a job file, with its defaults (the
// `default` tags, the only place they are written) and its checks
// (Validate). The config loader decodes into it; code builds one with
// DefaultConfig.
type Config struct {
	// Interval is the base period: checkpoint n+1 is due Interval after
	// checkpoint n was triggered.
	Interval time.Duration `yaml:"interval" default:"1s" doc:"how often a checkpoint is triggered"`
	// Timeout: a checkpoint not acknowledged by every task within Timeout
	// of being triggered is aborted with ErrExpired. Once every task
	// acknowledged it, it no longer expires: its fate is the persist's.
	Timeout time.Duration `yaml:"timeout" default:"60s" doc:"a checkpoint pending longer fails (the job goes on)"`
	// MinPause is the least time between a checkpoint completing and the
	// next being triggered. The Coordinator knows time only from ticks: a
	// completion happens at the time of the latest Tick.
	MinPause time.Duration `yaml:"min_pause" default:"0s" doc:"least time between one checkpoint completing and the next starting"`
	// MaxConcurrent bounds the checkpoints pending at once (triggered and
	// neither completed nor aborted). A due checkpoint waits for a slot.
	MaxConcurrent int `yaml:"max_concurrent" default:"1" doc:"checkpoints in flight at once"`
	// Retained is how many completed checkpoints the store keeps. The
	// Coordinator does not act on it (retention belongs to the store).
	Retained int `yaml:"retained" default:"3" doc:"completed checkpoints kept on disk"`
	// Mode is passed on to the aligners; see Mode.
	Mode Mode `yaml:"mode" default:"exactly_once" doc:"exactly_once | at_least_once (no barrier alignment)"`
	// Dir holds the checkpoint metadata (the store's directory).
	Dir string `yaml:"dir" default:"./data/checkpoints" doc:"where checkpoint metadata is kept"`
	// InitialDelay bounds the random delay before the first checkpoint:
	// the first one is due Rand()*InitialDelay after the first Tick, so
	// that jobs started together do not checkpoint in lockstep.
	InitialDelay time.Duration `yaml:"initial_delay" default:"@interval" doc:"bound of the random delay before the first checkpoint"`
	// TolerableFailures is how many checkpoints in a row may fail (declines,
	// timeouts, metadata persist failures; not subsumption or cancellation)
	// before the Coordinator fails the job. A completed checkpoint resets
	// the count. 0 fails the job on the first failed checkpoint. A failed
	// checkpoint discards nothing: its committables go into the next one.
	TolerableFailures int `yaml:"tolerable_failures" default:"5" doc:"failed checkpoints in a row before the job restarts"`
	// OnUnrestorable says what a start does when the newest checkpoint on
	// disk cannot be restored (damaged metadata, a missing state file):
	// "fail" (the default) refuses, naming the checkpoint and the problem,
	// unless restoring an older one is provably safe (the sink shows no
	// output of the checkpoints skipped); "fall_back" restores the newest
	// restorable one (or none), accepting that output the skipped
	// checkpoints committed is written again.
	OnUnrestorable string `yaml:"on_unrestorable" default:"fail" enum:"fail,fall_back" doc:"fail | fall_back: when the newest checkpoint cannot be restored"`
}

// OnUnrestorable values.
const (
	UnrestorableFail     = "fail"
	UnrestorableFallBack = "fall_back"
)

// Upper bounds: far above any sensible value, low enough that a typo
// cannot exhaust memory.
const (
	maxConcurrentLimit = 100
	retainedLimit      = 1000
	maxDuration        = 7 * 24 * time.Hour
)

// Validate reports every value out of range, under its YAML key.
func (c *Config) Validate(p *spec.Problems) {
	spec.Positive(p, "interval", c.Interval)
	spec.AtMost(p, "interval", c.Interval, maxDuration)
	spec.Positive(p, "timeout", c.Timeout)
	spec.AtMost(p, "timeout", c.Timeout, maxDuration)
	spec.NotNegative(p, "min_pause", c.MinPause)
	spec.AtMost(p, "min_pause", c.MinPause, maxDuration)
	p.Between("max_concurrent", c.MaxConcurrent, 1, maxConcurrentLimit)
	p.Between("retained", c.Retained, 1, retainedLimit)
	if c.Mode != ExactlyOnce && c.Mode != AtLeastOnce {
		p.Add("mode", "unknown mode %v (want exactly_once or at_least_once)", c.Mode)
	}
	p.Required("dir", c.Dir)
	spec.NotNegative(p, "initial_delay", c.InitialDelay)
	spec.AtMost(p, "initial_delay", c.InitialDelay, maxDuration)
	p.Between("tolerable_failures", c.TolerableFailures, 0, math.MaxInt32)
	spec.OneOf(p, "on_unrestorable", "choice", c.OnUnrestorable, UnrestorableFail, UnrestorableFallBack)
}

// DefaultConfig returns the checkpoint: section with every default filled.
func DefaultConfig() Config {
	var c Config
	if err := spec.Fill(&c, "", nil); err != nil {
		panic(err) // a malformed default tag: a bug
	}
	return c
}

// Settings configure a Coordinator: the checkpoint: section plus what the
// runtime injects. Start from DefaultSettings, change what the config sets,
// and let NewCoordinator call Validate.
type Settings struct {
	Config
	// Rand returns a number in [0, 1). It is the only randomness the
	// Coordinator uses; the runtime passes rand.Float64, tests a fixed or
	// seeded source. Nil means 0: no initial delay.
	Rand func() float64
}

// DefaultSettings returns the defaults of Config, without randomness.
func DefaultSettings() Settings { return Settings{Config: DefaultConfig()} }

// Validate reports the values out of range, naming their YAML keys under
// checkpoint:. The error wraps ErrInvalidSettings.
func (s Settings) Validate() error {
	var p spec.Problems
	s.Config.Validate(p.At("checkpoint"))
	if len(p.List()) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidSettings, &p)
	}
	return nil
}
