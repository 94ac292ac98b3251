package pipeline

import (
	"github.com/connector-dev/connector/checkpoint"
)

// coordinatorSettings is the checkpoint: section with the runtime's
// randomness for the initial delay.
func coordinatorSettings(c checkpoint.Config, rand func() float64) checkpoint.Settings {
	return checkpoint.Settings{Config: c, Rand: rand}
}
