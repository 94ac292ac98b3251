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
// does: the same bytes, size and trailer, also when its full chunks were
// handed over (to a stream) as it filled, and when it fills chunks
// recycled from a pool.
func TestADeltaInChunksEncodesAsOneBuffer(t *testing.T) {
	type op struct {
		kg         uint16
		key, value string // value "": a delete
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var ops []op
	for i := range 300 {
		o := op{kg: uint16(rng.IntN(128)), key: fmt.Sprintf("transform/dedup/0/%d", rng.IntN(500))}
		if i%7 != 0 {
			o.value = strings.Repeat(string(rune('a'+i%26)), 1+rng.IntN(40))
		}
		ops = append(ops, o)
	}
	// fill writes ops into d, handing over its full chunks after each one
	// when hand is set, and returns the encoding: the handed chunks, then
	// d's.
	fill := func(d *delta, hand bool) []byte {
		var handed [][]byte
		for _, o := range ops {
			if o.value == "" {
				d.del(o.kg, []byte(o.key))
			} else {
				d.set(o.kg, []byte(o.key), []byte(o.value))
			}
			if hand {
				for _, c := range d.full() {
					if len(c) != deltaChunk {
						t.Fatalf("a chunk of %d bytes handed over, want only full ones (%d)", len(c), deltaChunk)
					}
					handed = append(handed, c)
				}
			}
		}
		return bytes.Join(append(handed, d.chunks...), nil)
	}

	one := newDelta(nil, 128) // every test delta fits the default chunk
	want := fill(one, false)
	if len(one.chunks) != 1 || one.bytes() != int64(len(want)) {
		t.Fatalf("%d chunks of %d bytes for %d bytes (size %d)", len(one.chunks), deltaChunk, len(want), one.bytes())
	}
	wantTrailer := one.trailer()

	defer func(n int) { deltaChunk = n }(deltaChunk)
	deltaChunk = 7
	for _, hand := range []bool{false, true} {
		for _, recycled := range []bool{false, true} {
			var pool chan []byte
			if recycled { // chunks written before, and scribbled on (as a vfs.File may)
				pool = make(chan []byte, 2000)
				for range cap(pool) {
					recycle(pool, append(make([]byte, 0, 7), "scribbl"...))
				}
			}
			d := newDelta(pool, 128)
			got := fill(d, hand)
			if !bytes.Equal(got, want) || d.bytes() != int64(len(want)) || d.n != one.n {
				t.Fatalf("in chunks of 7 (handed over %v, recycled %v): %d bytes (size %d, %d entries), want %d bytes, %d entries, equal",
					hand, recycled, len(got), d.bytes(), d.n, len(want), one.n)
			}
			if wantHanded := int64(len(want)-len(d.chunks[0])) * int64(btoi(hand)); d.handed != wantHanded ||
				!hand && len(d.chunks) < len(want)/7 || hand && len(d.chunks) != 1 {
				t.Fatalf("handed over %v: %d chunks left, %d bytes handed over; want %d", hand, len(d.chunks), d.handed, wantHanded)
			}
			if !bytes.Equal(d.trailer(), wantTrailer) {
				t.Fatalf("handed over %v, recycled %v: the trailers differ", hand, recycled)
			}
			if recycled && cap(pool)-len(pool) < len(want)/7 {
				t.Fatalf("%d chunks taken from the pool for %d bytes", cap(pool)-len(pool), len(want))
			}
		}
	}
}
