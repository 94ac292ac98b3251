package transform

import (
	"errors"
	"fmt"
	"strings"

	"github.com/connector-dev/connector/internal/spec"
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

// configError builds an ErrInvalidConfig error naming key, a dotted path
// whose first part is the transform kind ("filter.condition.op").
func configError(key, format string, args ...any) error {
	return &configErr{key: key, msg: fmt.Sprintf(format, args...)}
}

type configErr struct{ key, msg string }

func (e *configErr) Error() string { return ErrInvalidConfig.Error() + ": " + e.key + ": " + e.msg }
func (e *configErr) Unwrap() error { return ErrInvalidConfig }

// report puts a constructor's error into p, under its key relative to the
// kind's config ("filter.condition.op" -> "condition.op").
func report(p *spec.Problems, kind string, err error) {
	var ce *configErr
	switch {
	case err == nil:
	case errors.As(err, &ce):
		key := strings.TrimPrefix(strings.TrimPrefix(ce.key, kind), ".")
		p.Add(key, "%s", ce.msg)
	default:
		p.Add("", "%v", err)
	}
}
