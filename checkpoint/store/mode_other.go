//go:build !unix

package store

import "io"

// LockMode is a no-op where fcntl locks do not exist: nothing keeps a
// single-mode process from a group's members there.
func LockMode(dir string, group bool) (io.Closer, error) { return io.NopCloser(nil), nil }
