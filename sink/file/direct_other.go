//go:build !linux

package file

import "github.com/cockroachdb/pebble/v2/vfs"

// setDirect: direct I/O is Linux only; elsewhere parts are buffered.
func setDirect(_ vfs.File, on bool) bool { return !on }
