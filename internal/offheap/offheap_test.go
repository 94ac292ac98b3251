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
