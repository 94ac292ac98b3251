package state

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/keygroup"
)

// The benchmarks compare the two ways to make a full snapshot (Snapshot)
// hold every write: the WAL on, unsynced, with pebble.WithFlushedWAL, which
// syncs the live WAL and copies it into every checkpoint; and the WAL
// disabled with a memtable flush before the checkpoint (what Open does:
// full snapshots are rare, changelogs make the checkpoints). Measured on 2
// shared cores (ns/op of Snapshot):
//
//	keys      wal=on   wal=off   (10k updates between snapshots)
//	100k      18 ms    23 ms
//	1M        24 ms    44 ms
//	Set       3.1 µs   2.9 µs
//
// Run without -race:
//
//	go test -run '^$' -bench . -benchtime 20x ./state/

// benchKey writes the 16-byte key of record i into k, in scattered order.
func benchKey(k []byte, i, n int) []byte {
	return fmt.Appendf(k[:0], "k%015d", (uint64(i)*2654435761)%uint64(n))
}

func openBench(b *testing.B, wal bool) *Store {
	root := b.TempDir()
	s, err := open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo}, zerolog.Nop(), wal)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func load(b *testing.B, s *Store, from, count, n int) {
	k, v := make([]byte, 0, 16), make([]byte, 8)
	for i := from; i < from+count; i++ {
		binary.BigEndian.PutUint64(v, uint64(i))
		if err := s.Set(benchKey(k, i, n), v); err != nil {
			b.Fatal(err)
		}
	}
}

func walName(wal bool) string {
	if wal {
		return "wal=on"
	}
	return "wal=off"
}

// BenchmarkSet measures Set of 16-byte keys and 8-byte values.
func BenchmarkSet(b *testing.B) {
	for _, wal := range []bool{false, true} {
		b.Run(walName(wal), func(b *testing.B) {
			s := openBench(b, wal)
			b.ResetTimer()
			load(b, s, 0, b.N, 1<<30)
		})
	}
}

// BenchmarkSnapshot1MKeys measures Snapshot over 100k and 1M keys. Each
// iteration first updates 10k keys (untimed), the writes of a checkpoint
// interval, then snapshots. first-ms is the snapshot right after the load.
func BenchmarkSnapshot1MKeys(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, wal := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/%s", n, walName(wal)), func(b *testing.B) {
				benchSnapshot(b, n, wal)
			})
		}
	}
}

func benchSnapshot(b *testing.B, n int, wal bool) {
	s := openBench(b, wal)
	chk := b.TempDir()
	start := time.Now()
	load(b, s, 0, n, n)
	loadDur := time.Since(start)
	h, err := s.Snapshot(filepath.Join(chk, "first"))
	if err != nil {
		b.Fatal(err)
	}
	first := h.Duration
	const perInterval = 10_000
	var bytes, shared, files int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		load(b, s, n+i*perInterval, perInterval, n)
		dir := filepath.Join(chk, fmt.Sprint(i))
		b.StartTimer()
		h, err := s.Snapshot(dir)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		bytes += h.Bytes
		shared += int64(h.SharedFiles)
		files += int64(len(h.Files))
		if i > 0 { // keep the previous one, as retention would
			_ = os.RemoveAll(filepath.Join(chk, fmt.Sprint(i-1)))
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	b.ReportMetric(float64(loadDur.Nanoseconds())/float64(n), "load-ns/set")
	b.ReportMetric(float64(bytes)/float64(b.N)/1e6, "MB/snapshot")
	b.ReportMetric(float64(shared)/float64(b.N), "shared/snapshot")
	b.ReportMetric(float64(files)/float64(b.N), "files/snapshot")
}

// BenchmarkDedupLookup is dedup's access pattern on a store already holding
// 1M keys spread over the key space and over all 128 key groups (one worker
// owns them all): the worker sets the record's key group, then a point
// lookup of a key not seen yet, then its Set.
func BenchmarkDedupLookup(b *testing.B) {
	s, err := Open(Config{Dir: b.TempDir(), KeyGroups: keygroup.Range{Start: 0, End: keygroup.DefaultMax}}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key := make([]byte, 16)
	val := make([]byte, 9)
	// The key group is derived from the key cheaply: the benchmark
	// measures the Store, not the hash the worker computes.
	setKey := func(i int) {
		x := spread(uint64(i))
		binary.BigEndian.PutUint64(key, x)
		if err := s.SetKeyGroup(int(x % keygroup.DefaultMax)); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1_000_000 {
		setKey(i)
		if err := s.Set(key, val); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.apply(); err != nil {
		b.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		setKey(2_000_000 + i)
		if _, _, err := s.Get(key); err != nil {
			b.Fatal(err)
		}
		if err := s.Set(key, val); err != nil {
			b.Fatal(err)
		}
	}
}

// spread scatters consecutive integers over the uint64 space (a bijection).
func spread(x uint64) uint64 {
	x ^= x >> 31
	x *= 0x7fb5d329728ea185
	x ^= x >> 27
	return x * 0x81dadef4bc2dd44d
}

// BenchmarkDeltaSet measures a changelog's encoding of one Set of a
// dedup's numbered entry (a 32-byte key, a 17-byte value), key groups
// varying as a worker's records' do.
func BenchmarkDeltaSet(b *testing.B) {
	d := newDelta(nil, 128)
	key := []byte("transform/dedup/0/\x00\x80\x00\x00\x00\x00\x00\x03\x84\x01\x00\x00\x00\x00")
	value := []byte("\x02\x00\x00\x01\x9b\x00\x00\x00\x00u0000042")
	b.SetBytes(int64(len(key) + len(value)))
	i := uint32(0)
	for b.Loop() {
		i++
		binary.BigEndian.PutUint32(key[len(key)-4:], i)
		d.set(uint16(i%128), key, value)
		if d.bytes() > 64<<20 {
			b.StopTimer()
			d = newDelta(nil, 128)
			b.StartTimer()
		}
	}
}
