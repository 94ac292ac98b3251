package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/connector-dev/connector/internal/keygroup"
)

// Every state key is stored in Pebble behind a tag byte and before its key
// group, two bytes big-endian (layout 2):
//
//	0x80 | key as the transforms wrote it | kg (uint16 BE)
//
// The key group comes last so that keys written in order (sequence numbers,
// time-ordered ids) stay in order in the database whatever their key
// groups: Pebble's flushes then overlap a narrow part of the older data and
// compactions stay cheap. With the key group first (layout 1, the way Flink
// lays out RocksDB), consecutive ids are scattered over every key group,
// every flush overlaps the whole database, and a dedup over 1M in-order ids
// spent 4x the CPU in compactions (bench/RESULTS.md). The price is paid at
// a rescale, which reads every key of a source to pick its key groups
// instead of a range of them; rescales are rare, writes are not.
//
// The key group is fixed-size and last, so a Pebble key decodes
// unambiguously. Keys from 0xff on are the Store's own (markerKey,
// layoutKey). Layout 1 (kg | key, first byte below 0x80 as key groups are
// below keygroup.MaxLimit) is read from full snapshots written before, and
// rewritten at restore (reshape).
const (
	kgLen         = 2
	stateTag      = 0x80
	currentLayout = 2
)

// appendKey appends the Pebble key of key in key group kg to dst.
func appendKey(dst []byte, kg uint16, key []byte) []byte {
	dst = append(append(dst, stateTag), key...)
	return binary.BigEndian.AppendUint16(dst, kg)
}

// decodeKey splits a Pebble state key of the given layout into its key
// group and the transform's key; ok is false for a key that is not one.
func decodeKey(layout int, pk []byte) (kg int, key []byte, ok bool) {
	switch {
	case layout == 1 && len(pk) >= kgLen && pk[0] < stateTag:
		return int(binary.BigEndian.Uint16(pk)), pk[kgLen:], true
	case layout == currentLayout && len(pk) >= 1+kgLen && pk[0] == stateTag:
		return int(binary.BigEndian.Uint16(pk[len(pk)-kgLen:])), pk[1 : len(pk)-kgLen], true
	}
	return 0, nil, false
}

// stateSpan bounds the state keys of a layout: [lo, hi).
func stateSpan(layout int) (lo, hi []byte) {
	if layout == 1 {
		return []byte{0}, []byte{stateTag}
	}
	return []byte{stateTag}, []byte{stateTag + 1}
}

// markerKey holds the max parallelism the state was written with, in
// decimal. Open writes it, so every full snapshot carries it, and checks
// it in every full snapshot it restores: state keyed with another number
// of key groups would be read under the wrong ones. layoutKey holds the
// key layout ("2"); a full snapshot without it has layout 1.
var (
	markerKey = []byte("\xffstate/max_parallelism")
	layoutKey = []byte("\xffstate/layout")
)

// ErrKeyGroup is the class of the errors of a state access outside the
// Store's key groups: SetKeyGroup with a key group the Store does not own,
// or Get, Set or Delete before any SetKeyGroup. Either is a bug in the
// caller's routing.
var ErrKeyGroup = errors.New("state: key group")

// ErrIncompatible is the class of the errors of a restore from state this
// Store cannot read: written with another max parallelism (its keys would
// be read under the wrong key groups) or before key groups. Restarting does
// not help; only restoring with the max parallelism the state was written
// with does.
var ErrIncompatible = errors.New("state: incompatible snapshot")

// errNoKeyGroup is the access error until the first SetKeyGroup.
var errNoKeyGroup = fmt.Errorf("%w: none set (call SetKeyGroup before Get, Set or Delete)", ErrKeyGroup)

// SetKeyGroup makes kg the key group of the keys of the following Get, Set
// and Delete calls: the worker calls it before running a record through the
// transforms, with keygroup.Of of the record's key. It costs no allocation.
//
// A key group outside Config.KeyGroups is a routing bug: SetKeyGroup
// returns an error of class ErrKeyGroup, and so does every Get, Set and
// Delete until a SetKeyGroup in range, so that no access reads or writes
// another key group's state. A Store whose range is one key group starts
// with it set; any other starts with none (the same error).
func (s *Store) SetKeyGroup(kg int) error {
	if !s.keyGroups.Contains(kg) {
		s.kgErr = fmt.Errorf("%w %d is not in this store's range %s", ErrKeyGroup, kg, s.keyGroups)
		return s.kgErr
	}
	s.kg = uint16(kg)
	s.kgErr = nil
	return nil
}

// KeyGroup returns the key group of the following Get, Set and Delete (the
// last SetKeyGroup that succeeded).
func (s *Store) KeyGroup() int { return int(s.kg) }

// KeyGroups returns the range of key groups the Store owns.
func (s *Store) KeyGroups() keygroup.Range { return s.keyGroups }

// pebbleKey returns key's Pebble key in the current key group, in the
// Store's scratch buffer: valid until the next call.
func (s *Store) pebbleKey(key []byte) []byte {
	s.key = appendKey(s.key[:0], s.kg, key)
	return s.key
}

// checkMarker checks that db, restored from the full snapshot base, was
// written with max parallelism maxPar, and returns its key layout.
func checkMarker(db *pebble.DB, base string, maxPar int) (layout int, err error) {
	recorded, found, err := getString(db, markerKey)
	switch {
	case err != nil:
		return 0, fmt.Errorf("read %s's max parallelism: %w", base, err)
	case !found:
		return 0, fmt.Errorf("%w: full snapshot %s records no max parallelism (written before key groups)", ErrIncompatible, base)
	}
	if got, err := strconv.Atoi(recorded); err != nil || got != maxPar {
		return 0, fmt.Errorf("%w: full snapshot %s was written with max parallelism %q, not %d", ErrIncompatible, base, recorded, maxPar)
	}
	l, found, err := getString(db, layoutKey)
	switch {
	case err != nil:
		return 0, fmt.Errorf("read %s's key layout: %w", base, err)
	case !found:
		return 1, nil
	case l != strconv.Itoa(currentLayout):
		return 0, fmt.Errorf("%w: full snapshot %s has key layout %q, which this version cannot read (it reads 1 and %d)", ErrIncompatible, base, l, currentLayout)
	}
	return currentLayout, nil
}

// getString reads key's value as a string.
func getString(db *pebble.DB, key []byte) (value string, found bool, err error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	value = string(v)
	return value, true, closer.Close()
}
