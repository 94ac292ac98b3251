package main

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestProgressStopWaitsForALinePrinting: dev's stop of its progress lines
// returns only once a line being printed is done, so that the final
// summary printed after it is the last line (CI saw a progress line after
// the summary when the stop only cancelled the printer's context).
func TestProgressStopWaitsForALinePrinting(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var prints, finished atomic.Int32
	stop := startProgress(time.Millisecond, func() {
		if prints.Add(1) == 1 {
			close(entered)
			<-release // the stop comes while this line prints
		}
		finished.Add(1)
	})
	<-entered
	stopped := make(chan int32)
	go func() {
		stop()
		stopped <- finished.Load()
	}()
	// A stop that returns while the line is held is the fault. A correct
	// stop cannot return here whatever the wait; the wait only bounds how
	// long a wrong one has to show itself.
	select {
	case n := <-stopped:
		t.Fatalf("stop returned while a line was printing (%d of %d prints finished)", n, prints.Load())
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if n := <-stopped; n != prints.Load() || n == 0 {
		t.Fatalf("stop returned with %d of %d prints finished", n, prints.Load())
	}
}
