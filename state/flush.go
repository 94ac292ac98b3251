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

// flushFailures tells the goroutines waiting in flushWait of failed flush
// attempts, numbered as they begin: a waiter counts only the attempts that
// began after its flush was asked for (one under way then may have been
// writing to the full disk that has room now).
type flushFailures struct {
	mu         sync.Mutex
	begun      uint64         // attempts begun
	jobs       map[int]uint64 // attempts under way: Pebble's job ID -> number
	err        error          // the last failure
	errAttempt uint64         // its attempt's number
	failing    bool           // the last attempt that ended failed
	next       chan struct{}  // closed at the next failure; nil: nobody waits
}

func (f *flushFailures) began(job int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs == nil {
		f.jobs = map[int]uint64{}
	}
	f.begun++
	f.jobs[job] = f.begun
}

// ended records how attempt job ended, and wakes the waiters if it failed.
func (f *flushFailures) ended(job int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.jobs[job]
	delete(f.jobs, job)
	f.failing = err != nil
	if err == nil {
		return
	}
	f.err, f.errAttempt = err, n
	if f.next != nil {
		close(f.next)
		f.next = nil
	}
}

// attempts is how many attempts have begun.
func (f *flushFailures) attempts() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.begun
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

// stillFailing returns the last failure if no attempt ended well after
// it, else nil.
func (f *flushFailures) stillFailing() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return f.err
	}
	return nil
}

// failedAfter returns the last failure if its attempt began after attempt
// n, else nil.
func (f *flushFailures) failedAfter(n uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errAttempt > n {
		return f.err
	}
	return nil
}

// flushWait flushes db's memtable and waits until it is in an sstable, or
// returns the error of a flush attempt begun after the call that failed
// meanwhile (the flush then goes on in the background, retried by Pebble,
// and a later call waits for it).
//
// While the last flush failed (Pebble retries it), it returns that failure
// at once: another flush asked for would only queue one more memtable
// behind it, and at Pebble's limit of queued memtables every write and
// flush blocks until the disk has room (snapshots failing on a full disk,
// one a tick while a job stops, wedged it).
func (s *Store) flushWait(db *pebble.DB) error {
	if err := s.flushes.stillFailing(); err != nil {
		return err
	}
	since := s.flushes.attempts()
	done, err := db.AsyncFlush()
	if err != nil {
		return err
	}
	for {
		failed := s.flushes.watch()
		if err := s.flushes.failedAfter(since); err != nil {
			return err
		}
		select {
		case <-done:
			return nil
		case <-failed:
		}
	}
}
