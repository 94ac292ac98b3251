package offheap

import (
	"runtime"
	"testing"
	"time"
)

// A large table is mapped, zeroed and writable, and unmapped once its
// *Words is unreachable; a small one is an ordinary slice.
func TestATableIsUnmappedOnceUnreachable(t *testing.T) {
	before := Mapped()
	small := New(minMapped/8 - 1)
	if Mapped() != before || len(small.W) != minMapped/8-1 {
		t.Fatalf("a small table mapped %d bytes", Mapped()-before)
	}
	const n = 1 << 20
	big := New(n)
	if got := Mapped() - before; got != n*8 {
		t.Fatalf("mapped %d bytes for %d words, want %d", got, n, n*8)
	}
	for i, v := range big.W {
		if v != 0 {
			t.Fatalf("word %d = %d, want a zeroed table", i, v)
		}
		big.W[i] = uint64(i)
	}
	if big.W[n-1] != n-1 {
		t.Fatal("the last word did not keep its value")
	}
	runtime.KeepAlive(big)
	big = nil
	// Cleanups run on their own goroutine after a collection.
	for deadline := time.Now().Add(10 * time.Second); Mapped() != before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still mapped 10 s after the table became unreachable", Mapped()-before)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// A table freed is unmapped at once, and a collection after does not
// unmap it again; freeing a small table, or nil, does nothing.
func TestAFreedTableIsUnmappedAtOnce(t *testing.T) {
	before := Mapped()
	const n = 1 << 20
	big := New(n)
	big.W[n-1] = 1
	big.Free()
	if got := Mapped() - before; got != 0 || big.W != nil {
		t.Fatalf("after Free: %d bytes mapped, W of %d words; want none", got, len(big.W))
	}
	big.Free() // twice: nothing more
	// Another table mapped meanwhile must stay counted through the
	// collections that find the freed one unreachable.
	other := New(n)
	// A canary unreachable from the same collection on: once its cleanup
	// ran, big's, which the same collection queued, has mostly run too
	// (cleanups may run concurrently, so this check can miss a cleanup
	// that runs late, never fail one that does not run). Without Free's
	// Stop, big's unmapped again and took its bytes off the count a
	// second time (5 runs of 5).
	ran := make(chan struct{})
	canary := new([64]byte)
	runtime.AddCleanup(canary, func(ch chan struct{}) { close(ch) }, ran)
	big, canary = nil, nil
	runtime.GC()
	runtime.GC()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no cleanup ran 10 s after two collections")
	}
	if got := Mapped() - before; got != n*8 {
		t.Fatalf("%d bytes mapped with one table of %d words left, want %d", got, n, n*8)
	}
	other.W[n-1] = 1 // still mapped and writable
	other.Free()     // nothing left mapped for the tests after
	small := New(8)
	small.Free()
	var none *Words
	none.Free()
}
