package checkpoint

import "errors"

// Error classes. Every reason and error this package hands out wraps exactly one
// of these (plus, where there is one, the cause it was given), so callers check
// them with errors.Is and never by string.
var (
	// ErrDeclined: a task declined a checkpoint (it could not snapshot).
	ErrDeclined = errors.New("declined")
	// ErrExpired: a checkpoint was not acknowledged by every task within
	// Settings.Timeout.
	ErrExpired = errors.New("expired")
	// ErrSubsumed: a newer checkpoint completed (or, in an aligner, a newer
	// barrier arrived) first. Subsumption is not a failure: it does not count
	// towards Settings.TolerableFailures.
	ErrSubsumed = errors.New("subsumed")
	// ErrPersistFailed: the completed checkpoint's metadata could not be
	// written durably (for example the disk is full). The checkpoint fails;
	// the job goes on.
	ErrPersistFailed = errors.New("metadata persist failed")
	// ErrCancelled: an aligner gave up on a checkpoint because a cancellation
	// marker for it arrived on an input channel, or because the coordinator
	// aborted it. Like ErrSubsumed it does not count as a failure of its own:
	// whoever caused the cancellation already failed the checkpoint.
	ErrCancelled = errors.New("cancelled")
	// ErrAlignmentLimit: an aligner held back more input than
	// AlignerSettings.MaxHeldBytes while aligning and gave the checkpoint up.
	ErrAlignmentLimit = errors.New("alignment limit exceeded")
	// ErrInputEnded: every input channel of a task ended while a checkpoint
	// was still being aligned (at-least-once mode only; see Aligner).
	ErrInputEnded = errors.New("input ended")
	// ErrTaskFailed: a task failed; the job must restart from the last
	// completed checkpoint.
	ErrTaskFailed = errors.New("task failed")
	// ErrTooManyFailures: more than Settings.TolerableFailures checkpoints
	// failed in a row. It wraps the last failure's reason too.
	ErrTooManyFailures = errors.New("too many consecutive checkpoint failures")

	// ErrInvalidSettings: Settings.Validate or AlignerSettings.Validate
	// rejected a value. The message names the YAML key.
	ErrInvalidSettings = errors.New("invalid checkpoint settings")
	// ErrBadEvent: the driver stepped the Coordinator with an event that
	// cannot happen (an unknown task, an id never triggered, time running
	// backwards, a persist result for a checkpoint not being persisted). It
	// is a bug in the driver; the Coordinator's state is unchanged.
	ErrBadEvent = errors.New("bad coordinator event")
	// ErrBadInput: the runtime fed an Aligner an element that cannot happen
	// (a channel out of range, input after a channel's end). It is a bug in
	// the runtime; the Aligner's state is unchanged.
	ErrBadInput = errors.New("bad aligner input")
)

// countsAsFailure says whether a checkpoint that ended for reason counts towards
// Settings.TolerableFailures. Subsumption and cancellation do not (as in
// Flink's CheckpointFailureManager): they are consequences, not causes.
func countsAsFailure(reason error) bool {
	return !errors.Is(reason, ErrSubsumed) && !errors.Is(reason, ErrCancelled)
}
