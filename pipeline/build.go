package pipeline

import (
	"math/rand/v2"

	"github.com/connector-dev/connector/checkpoint"
)

// coordinatorSettings is the checkpoint: section with the runtime's
// randomness for the initial delay.
func coordinatorSettings(c checkpoint.Config) checkpoint.Settings {
	return checkpoint.Settings{Config: c, Rand: rand.Float64}
}
