package cfgkey

import "errors"

// Error is Err, about the config key Key (a dotted path, "sink.bucket",
// "kafka.sasl.password"). Its text is Err's, unchanged.
type Error struct {
	Key string
	Err error
}

// Error returns Err's text.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns Err, so errors.Is and errors.As see through the key.
func (e *Error) Unwrap() error { return e.Err }

// Wrap attaches key to err; it returns err itself when err is nil or key
// is "".
func Wrap(key string, err error) error {
	if err == nil || key == "" {
		return err
	}
	return &Error{Key: key, Err: err}
}

// Of returns the key attached to err or to an error it wraps (the
// outermost, as errors.As finds it), and whether there is one.
func Of(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Key, true
	}
	return "", false
}
