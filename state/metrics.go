package state

import "github.com/cockroachdb/pebble/v2"

// Metrics returns the state database's Pebble metrics (disk usage,
// memtables, compactions, read amplification, block cache), for the job's
// metrics.
//
// Unlike the Store's other methods it may be called from any goroutine,
// concurrently with them (Pebble's DB.Metrics is), but not concurrently
// with or after Close: the caller stops calling it before it closes the
// Store. It returns nil after Close.
func (s *Store) Metrics() *pebble.Metrics {
	if s.db == nil {
		return nil
	}
	return s.db.Metrics()
}
