package state

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// formatVersion is the format the Store's databases are opened at: the
// first with excises queued behind the memtables (Expire). Pebble raises a
// restored snapshot's older format to it when it opens the working copy
// (the snapshot itself is not written to). Earlier builds of the connector
// (the same Pebble, which knows the format) restore snapshots taken since.
const formatVersion = pebble.FormatFlushableIngestExcises

// Expire removes the keys in [start, end) from every key group of the
// Store, to free space (transform.KV documents the contract): the removal
// is not in the changelog, so a restore from changelogs brings the keys
// back until the transform expires them again, and a full snapshot taken
// after it no longer holds them. No key may be a proper prefix of start or
// end: the key group after each key would decide which side of the bound
// it falls on.
//
// It is an excise (pebble.DB.Excise): the tables wholly inside the range
// leave the database without being read, a table that straddles a bound is
// cut into a virtual table of what is outside (its file goes once nothing
// references it), and unflushed writes in the range are removed by queuing
// the memtable for a flush. The cost is one write and sync of Pebble's
// manifest, about 2 ms here (bench/RESULTS.md, "Expiry by excise"), the
// same whatever the amount of state expired. A range deletion and a
// compaction of the range (before) freed the space only once the
// compaction had read and rewritten every table the range touched: a
// dedup's expired buckets were read once more, to keep the tenth of them
// that straddled into the next bucket.
func (s *Store) Expire(start, end []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	if err := s.apply(); err != nil {
		return err
	}
	lo := append([]byte{stateTag}, start...)
	hi := append([]byte{stateTag}, end...)
	if err := s.db.Excise(context.Background(), pebble.KeyRange{Start: lo, End: hi}); err != nil {
		return fmt.Errorf("expire state keys [%q, %q): %w", start, end, err)
	}
	return nil
}

// ExpireForGood is Expire, after which the next Checkpoint takes a full
// snapshot (as after a failed changelog), so that no restore of it or of a
// later checkpoint brings the keys back from an older base or changelog.
// For a removal nothing would repeat: the state of a transform the job no
// longer has (transform.DropDedupState).
func (s *Store) ExpireForGood(start, end []byte) error {
	if err := s.Expire(start, end); err != nil {
		return err
	}
	s.delta = nil
	s.abortStream()
	return nil
}
