package state

import (
	"strconv"
	"testing"
)

// TestChangelogEntriesShareTheirNamespaceAcrossKeyGroups: consecutive
// writes land in unrelated key groups (the records' keys hash anywhere), so
// a changelog compresses each key after its key group, against the
// previous entry's: a dedup's entries cost about their distinct bytes, not
// their whole key (a whole-key encoding shared nothing after the key group
// and made changelogs four times larger, full snapshots and their
// compactions that much more frequent).
func TestChangelogEntriesShareTheirNamespaceAcrossKeyGroups(t *testing.T) {
	const n = 1000
	d := newDelta(nil, 128)
	value := make([]byte, 8)
	for i := range n {
		d.set(uint16(i*37%128), []byte("transform/dedup/0/"+strconv.Itoa(1_000_000+i)), value)
	}
	// An entry: op 1, key group 2, shared 1, length 1, about 4 distinct
	// bytes of the key, value length 1 and 8 bytes of value.
	if per := d.bytes() / n; per > 20 {
		t.Fatalf("%d bytes per entry of a 27-byte key and an 8-byte value, want at most 20", per)
	}
}
