package prefix

import (
	"encoding/binary"
	"math/bits"
)

// Common is the length of the longest common prefix of a and b, compared
// eight bytes at a time.
func Common(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	if i < n && n >= 8 {
		// The last 8 bytes, overlapping the equal ones.
		if x := binary.LittleEndian.Uint64(a[n-8:]) ^ binary.LittleEndian.Uint64(b[n-8:]); x != 0 {
			return n - 8 + bits.TrailingZeros64(x)/8
		}
		return n
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
