//go:build !unix

package fsutil

import "errors"

func truncateFd(uintptr, int64) error { return errors.New("truncate: not supported on this platform") }
