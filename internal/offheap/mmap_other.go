//go:build !unix

package offheap

import "errors"

func mmapWords(int, bool) ([]byte, []uint64, error) { return nil, nil, errors.ErrUnsupported }

func munmap([]byte) error { return errors.ErrUnsupported }
