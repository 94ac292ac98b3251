package source

import (
	"errors"
	"time"
)

// ErrPermanent classes a source error that no retry or restart can fix (a
// topic name the broker refuses, a missing authorization, a position that
// no longer applies under the policy fail): the job stops at once, with
// the error named.
var ErrPermanent = errors.New("source cannot go on")

// HealthReporter is implemented by sources that can tell whether they are
// making progress. Health returns nil, or why not (the brokers have not
// answered since when); the runtime reports the job not ready meanwhile.
// Safe from any goroutine.
type HealthReporter interface {
	Health() error
}

// HealthWindow is how long a source may go without hearing from its system
// before it reports itself unhealthy.
const HealthWindow = 15 * time.Second
