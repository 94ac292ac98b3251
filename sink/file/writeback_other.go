//go:build !linux

package file

import "github.com/cockroachdb/pebble/v2/vfs"

// startWriteBackRange is Linux only; elsewhere the caller uses SyncTo.
func startWriteBackRange(vfs.File, int64, int64) bool { return false }

// dropCachedRange is Linux only; elsewhere the page cache keeps the pages.
func dropCachedRange(vfs.File, int64, int64) {}
