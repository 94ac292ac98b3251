package state

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Namespaces lists the distinct beginnings of the state keys that start
// with prefix, each cut after the first sep that follows prefix (with
// "transform/dedup/" and '/': each dedup's namespace,
// "transform/dedup/orders/"), in key order, over every key group. It seeks
// once per namespace, whatever the amount of state under it. A key with no
// sep after prefix is listed whole.
func (s *Store) Namespaces(prefix []byte, sep byte) (_ [][]byte, err error) {
	if s.db == nil {
		return nil, ErrClosed
	}
	if err := s.apply(); err != nil {
		return nil, err
	}
	lo := append([]byte{stateTag}, prefix...)
	hi, ok := successor(lo)
	if !ok {
		return nil, fmt.Errorf("state namespaces of %q: no key follows the prefix", prefix)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	var out [][]byte
	for valid := it.First(); valid; {
		_, key, ok := decodeKey(currentLayout, it.Key())
		if !ok {
			return nil, fmt.Errorf("%w: key %q is no state key of layout %d", ErrIncompatible, it.Key(), currentLayout)
		}
		i := bytes.IndexByte(key[len(prefix):], sep)
		if i < 0 {
			out = append(out, slices.Clone(key))
			valid = it.Next()
			continue
		}
		ns := slices.Clone(key[:len(prefix)+i+1])
		out = append(out, ns)
		past, _ := successor(append([]byte{stateTag}, ns...)) // ns ends with sep < 0xff
		valid = it.SeekGE(past)
	}
	return out, it.Error()
}

// successor is the least key above every key that begins with p: p with
// its last byte below 0xff raised by one, the rest dropped; false when p
// is all 0xff.
func successor(p []byte) ([]byte, bool) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			out := slices.Clone(p[:i+1])
			out[i]++
			return out, true
		}
	}
	return nil, false
}
