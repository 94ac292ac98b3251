// Package cfgkey attaches to an error the config key it is about, so that
// a problem found only when the job starts and asks the outside world (a
// bucket, table or topic that does not exist, refused credentials) can be
// printed at the key's line of the config file, as a problem the config
// check finds is.
//
// It owns the wrapper (Error, Wrap) and its reading (Of). It does not own
// the error classes (sink.ErrInvalidConfig, kafkaclient.ErrMisconfigured,
// ...), which the wrapper passes through to errors.Is, nor the text: an
// error's message names its key itself, and Wrap leaves it unchanged. It
// knows nothing of lines: config.Job.Line maps a key to one.
package cfgkey
