package state

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// A memtable flush that fails (a full disk: ENOSPC) is retried by Pebble
// in the background, without end, and db.Flush waits until one succeeds:
// a snapshot on a full disk held its worker (and Close, a background
// snapshot) for as long as the disk stayed full, where the checkpoint
// should fail and the job go on. flushWait waits for the flush or the
// next failed attempt of one, whichever comes first; flushFailures, fed
// by the database's FlushEnd events, says when one failed.

// flushFailures broadcasts failed flushes to the goroutines waiting in
// flushWait.
type flushFailures struct {
	mu   sync.Mutex
	err  error         // the last failure
	next chan struct{} // closed at the next failure; nil: nobody waits
}

// failed records err and wakes the waiters.
func (f *flushFailures) failed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	if f.next != nil {
		close(f.next)
		f.next = nil
	}
}

// watch returns a channel closed at the next failure.
func (f *flushFailures) watch() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next == nil {
		f.next = make(chan struct{})
	}
	return f.next
}

func (f *flushFailures) last() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// flushWait flushes db's memtable and waits until it is in an sstable, or
// returns the error of a flush that failed meanwhile (the flush then goes
// on in the background, retried by Pebble, and a later call waits for it).
func (s *Store) flushWait(db *pebble.DB) error {
	failed := s.flushes.watch()
	done, err := db.AsyncFlush()
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-failed:
		return s.flushes.last()
	}
}
