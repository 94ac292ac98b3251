package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/connector-dev/connector/internal/keygroup"
)

// Every state key is stored in Pebble behind its key group, two bytes
// big-endian:
//
//	kg (uint16 BE) | key as the transforms wrote it
//
// so a key group's keys are contiguous, in the order of the key groups: a
// range of key groups is a range of Pebble keys, which a rescaled restore
// copies with a bounded iterator and drops with DeleteRange. Key groups are
// below keygroup.MaxLimit (0x8000): the first byte of a state key is below
// 0x80. Keys from 0x80 on are the Store's own; only markerKey is used.
const kgLen = 2

// kgKey is the first Pebble key of key group kg; kgKey(kg+1) bounds kg's
// keys from above. kg may be keygroup.MaxLimit, the end of every key group.
func kgKey(kg int) []byte { return binary.BigEndian.AppendUint16(make([]byte, 0, kgLen), uint16(kg)) }

// kgOf is the key group of a Pebble key; ok is false for a key too short to
// have one.
func kgOf(key []byte) (kg int, ok bool) {
	if len(key) < kgLen {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(key)), true
}

// markerKey holds the max parallelism the state was written with, in
// decimal. Open writes it, so every full snapshot carries it, and checks
// it in every full snapshot it restores: state keyed with another number
// of key groups would be read under the wrong ones.
var markerKey = []byte("\xffstate/max_parallelism")

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
	binary.BigEndian.PutUint16(s.key, uint16(kg))
	s.kgErr = nil
	return nil
}

// KeyGroups returns the range of key groups the Store owns.
func (s *Store) KeyGroups() keygroup.Range { return s.keyGroups }

// pebbleKey returns key behind the current key group, in the Store's
// scratch buffer: valid until the next call.
func (s *Store) pebbleKey(key []byte) []byte {
	s.key = append(s.key[:kgLen], key...)
	return s.key
}

// checkMarker checks that db, restored from the full snapshot base, was
// written with max parallelism maxPar.
func checkMarker(db *pebble.DB, base string, maxPar int) error {
	v, closer, err := db.Get(markerKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("%w: full snapshot %s records no max parallelism (written before key groups)", ErrIncompatible, base)
	}
	if err != nil {
		return fmt.Errorf("read %s's max parallelism: %w", base, err)
	}
	recorded := string(v)
	_ = closer.Close()
	if got, err := strconv.Atoi(recorded); err != nil || got != maxPar {
		return fmt.Errorf("%w: full snapshot %s was written with max parallelism %q, not %d", ErrIncompatible, base, recorded, maxPar)
	}
	return nil
}
