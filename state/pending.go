package state

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// pendingBytes is how much of Set and Delete the Store gathers before it
// applies them to Pebble as one batch. Each DB.Set is a commit of its own
// (a sequence number, the commit pipeline, then the memtable); in a dedup
// over 1M keys that was half the cost of writing a key. Small, so that a
// Get that must apply what is pending first stays cheap.
const pendingBytes = 64 << 10

// write adds a Set (value non-nil) or a Delete of the Pebble key k to the
// pending batch, and applies the batch once it is large enough.
func (s *Store) write(k, value []byte, del bool) error {
	if s.pend == nil {
		s.pend = s.db.NewBatch()
	}
	var err error
	if del {
		err = s.pend.Delete(k, nil)
	} else {
		err = s.pend.Set(k, value, nil)
	}
	if err != nil {
		return err
	}
	if s.pend.Len() >= pendingBytes {
		return s.apply()
	}
	return nil
}

// apply applies the pending writes to Pebble. Everything that reads
// Pebble, or writes to it otherwise than by write (an excise, a
// snapshot), calls it first, so that Pebble holds every write in the order
// the caller made them.
func (s *Store) apply() error {
	if s.pend == nil || s.pend.Empty() {
		return nil
	}
	if err := s.db.Apply(s.pend, pebble.NoSync); err != nil {
		return fmt.Errorf("apply state writes: %w", err)
	}
	s.pend.Reset()
	return nil
}
