package prefix

import (
	"math/rand/v2"
	"testing"
)

// Common agrees with a byte-by-byte count on strings of every length up
// to 40 that differ at every position, or not at all.
func TestCommonAgreesWithAByteByByteCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for la := range 41 {
		for lb := range 41 {
			a := make([]byte, la)
			for i := range a {
				a[i] = byte(rng.IntN(256))
			}
			for at := 0; at <= min(la, lb); at++ {
				b := make([]byte, lb)
				copy(b, a)
				for i := at; i < lb; i++ {
					b[i] = byte(rng.IntN(256))
				}
				if at < lb && at < la && b[at] == a[at] {
					b[at] = a[at] + 1
				}
				want := 0
				for want < la && want < lb && a[want] == b[want] {
					want++
				}
				if got := Common(a, b); got != want {
					t.Fatalf("Common(%x, %x) = %d, want %d", a, b, got, want)
				}
			}
		}
	}
}
