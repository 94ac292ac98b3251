//go:build !linux

package file

import "github.com/cockroachdb/pebble/v2/vfs"

// startWriteBackRange is Linux only; elsewhere the caller uses SyncTo.
func startWriteBackRange(vfs.File, int64, int64) bool { return false }
