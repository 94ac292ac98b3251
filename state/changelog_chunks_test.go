package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// A delta kept in chunks of a few bytes (entries, and values longer than a
// chunk, cut anywhere) encodes exactly what one chunk holding everything
// does: the same bytes, size and trailer; from(off) is the encoding after
// off for every off; a delta on a written one's chunks encodes the same
// again; a merge with a partly filled older delta is the two encodings one
// after the other.
func TestADeltaInChunksEncodesAsOneBuffer(t *testing.T) {
	type op struct {
		kg         uint16
		key, value string // value "": a delete
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ops := func(n int) []op {
		var out []op
		for i := range n {
			o := op{kg: uint16(rng.IntN(128)), key: fmt.Sprintf("transform/dedup/0/%d", rng.IntN(500))}
			if i%7 != 0 {
				o.value = strings.Repeat(string(rune('a'+i%26)), 1+rng.IntN(40))
			}
			out = append(out, o)
		}
		return out
	}
	fill := func(d *delta, ops []op) *delta {
		for _, o := range ops {
			if o.value == "" {
				d.del(o.kg, []byte(o.key))
			} else {
				d.set(o.kg, []byte(o.key), []byte(o.value))
			}
		}
		return d
	}
	joined := func(d *delta) []byte { return bytes.Join(d.from(0), nil) }
	older, newer := ops(300), ops(200)

	one := fill(newDelta(nil), older) // every test delta fits the default chunk
	if len(one.chunks) != 1 {
		t.Fatalf("%d chunks of %d bytes for %d bytes", len(one.chunks), deltaChunk, one.bytes())
	}
	oneMerged := fill(newDelta(nil), newer)
	want, wantNewer := joined(one), joined(oneMerged)
	oneMerged.mergeOlder(one)

	defer func(n int) { deltaChunk = n }(deltaChunk)
	deltaChunk = 7
	small := fill(newDelta(nil), older)
	if got := joined(small); !bytes.Equal(got, want) || small.bytes() != int64(len(want)) || small.n != one.n {
		t.Fatalf("in chunks of 7: %d bytes (size %d, %d entries), want %d bytes, %d entries, equal",
			len(got), small.bytes(), small.n, len(want), one.n)
	}
	if len(small.chunks) < len(want)/7 {
		t.Fatalf("%d chunks of 7 bytes for %d bytes", len(small.chunks), len(want))
	}
	h := header(128)
	if !bytes.Equal(small.trailer(h), one.trailer(h)) {
		t.Fatal("the trailers differ")
	}
	for off := range int64(len(want)) + 1 {
		if got := bytes.Join(small.from(off), nil); !bytes.Equal(got, want[off:]) {
			t.Fatalf("from(%d): %d bytes, want the %d after it", off, len(got), len(want)-int(off))
		}
	}
	again := fill(newDelta(small), older)
	if got := joined(again); !bytes.Equal(got, want) || len(again.free) != 0 {
		t.Fatalf("on a written delta's chunks: %d bytes, %d chunks left unused; want the same %d bytes, none", len(got), len(again.free), len(want))
	}
	merged, olderAgain := fill(newDelta(nil), newer), fill(newDelta(nil), older) // (again has small's chunks now)
	if last := olderAgain.chunks[len(olderAgain.chunks)-1]; len(last) == deltaChunk {
		t.Fatal("the older delta's last chunk is full: the merge would not put a partly filled chunk in the middle")
	}
	merged.mergeOlder(olderAgain)
	wantAll := append(append([]byte(nil), want...), wantNewer...)
	for name, d := range map[string]*delta{"in chunks of 7": merged, "in one chunk each": oneMerged} {
		if got := joined(d); !bytes.Equal(got, wantAll) || d.n != len(older)+len(newer) || d.bytes() != int64(len(wantAll)) {
			t.Errorf("merged %s: %d bytes (size %d), %d entries; want the two encodings, %d bytes, %d entries",
				name, len(got), d.bytes(), d.n, len(wantAll), len(older)+len(newer))
		}
	}
}
