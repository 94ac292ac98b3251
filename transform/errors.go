package transform

import (
	"errors"
	"fmt"
)

// Error classes. Every error this package returns wraps exactly one of them;
// callers check with errors.Is, never by string.
var (
	// ErrDecode: a record's value is not a JSON object (or not valid JSON).
	// The error is a *DecodeError naming the record and the byte. The runtime
	// applies the job's policy: fail, skip and count, or dead-letter. The
	// record's Value is unchanged when this is returned.
	ErrDecode = errors.New("cannot decode record value")
	// ErrInvalidConfig: a constructor rejected its Config. The message names
	// the offending key (for example "filter.op").
	ErrInvalidConfig = errors.New("invalid transform config")
	// ErrState: the KV failed, or holds a value this package did not write.
	// The task cannot go on; the runtime restarts from the last checkpoint.
	ErrState = errors.New("transform state")
)

// DecodeError says which record could not be decoded and where. It wraps
// ErrDecode.
type DecodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Pos       int    // byte position in the value
	Msg       string // what is wrong there
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: record %s[%d]@%d: byte %d: %s",
		ErrDecode, e.Topic, e.Partition, e.Offset, e.Pos, e.Msg)
}

// Unwrap makes errors.Is(err, ErrDecode) true.
func (e *DecodeError) Unwrap() error { return ErrDecode }

// configError builds an ErrInvalidConfig error naming key.
func configError(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, key, fmt.Sprintf(format, args...))
}
