package parquetfile

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"
)

var ordersSchema = Schema{Columns: []Column{
	{Name: "id", Type: TypeString}, {Name: "u", Type: TypeString}, {Name: "h", Type: TypeString},
	{Name: "amount", Type: TypeDouble}, {Name: "status", Type: TypeString}, {Name: "p", Type: TypeString},
}, Compression: CompressionZstd}

// BenchmarkRowGroupOfOrders appends and flushes rows shaped like the
// bench's orders (bench/cmd/load): a unique string id, strings of 1M and
// 100k distinct values, a double, a status of a few values and a padding
// string; a row group per 200k rows, as a checkpoint of a fast writer
// makes, all in one file (one Writer), as a sink writes them. It reports ns
// per row and the bytes per row of the file.
func BenchmarkRowGroupOfOrders(b *testing.B) {
	statuses := []string{"paid", "shipped", "pending", "cancelled"}
	benchRowGroups(b, func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"r%010d","u":"u%07d","h":"h%05d","amount":%d.%02d,"status":%q,"p":"xyzxyzxyzxyzxyzxyz"}`,
			i, i%1_000_000, i%100_000, i%10000, i%100, statuses[i%4])
	})
}

// BenchmarkRowGroupOfLoadRecords is the same with the exact 100-byte values
// of bench/cmd/load (Value), which the Kafka-to-S3 drain writes.
func BenchmarkRowGroupOfLoadRecords(b *testing.B) {
	benchRowGroups(b, loadValue)
}

// loadValue is bench/cmd/load's record i of 100 bytes.
func loadValue(i int) []byte {
	v := fmt.Appendf(nil, `{"id":"r%010d","u":"u%07d","h":"h%05d","amount":`, i, i%1_000_000, i%100_000)
	v = strconv.AppendInt(v, int64(1000+(i*7919)%9000), 10)
	v = fmt.Appendf(v, `.%02d,"status":"paid","p":"`, i%100)
	for j := range 100 - len(v) - 2 {
		v = append(v, byte('a'+(i+j)%26))
	}
	return append(v, `"}`...)
}

// BenchmarkRowGroupOfDrainOrder is BenchmarkRowGroupOfLoadRecords with
// the records in the order a worker of the Kafka-to-S3 drain got them while
// it shuffled them by key (pipeline.route: key), so that its bytes a row are
// that drain's (the sequential ids of the other two compress far better):
// the topic's 16 partitions hold records i mod 16 in order, fetches bring
// runs of a few hundred records of one partition, and the key shuffle sends
// every other record at random to the other worker.
func BenchmarkRowGroupOfDrainOrder(b *testing.B) {
	order := drainOrder(16, true)
	benchRowGroups(b, func(i int) []byte { return loadValue(order[i]) })
}

// BenchmarkRowGroupOfPartitionRuns is the order of the same drain with
// pipeline.route: partition (its default since): a worker gets whole runs
// of its own reader's partitions, 8 of the 16.
func BenchmarkRowGroupOfPartitionRuns(b *testing.B) {
	order := drainOrder(8, false)
	for i, r := range order {
		order[i] = r%8*2 + r/8*16 // partition 2k of 16 where drainOrder made k of 8
	}
	benchRowGroups(b, func(i int) []byte { return loadValue(order[i]) })
}

// drainOrder is the record numbers one worker gets: runs of 400 records of
// one of partitions (holding records i mod partitions in order), each
// record kept at random with probability 1/2 if split (the other worker
// takes the rest).
func drainOrder(partitions int, split bool) []int {
	const run = 400
	order := make([]int, 0, 200_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for next := make([]int, partitions); len(order) < cap(order); {
		p := rng.IntN(partitions)
		for range run {
			i := p + partitions*next[p]
			next[p]++
			if (!split || rng.IntN(2) == 0) && len(order) < cap(order) {
				order = append(order, i)
			}
		}
	}
	return order
}

func benchRowGroups(b *testing.B, value func(i int) []byte) {
	const rows = 200_000
	values := make([][]byte, rows)
	for i := range values {
		values[i] = value(i)
	}
	w, err := NewWriter(ordersSchema)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	var size int
	for range b.N {
		for _, v := range values {
			if err := w.Append(v); err != nil {
				b.Fatal(err)
			}
		}
		out, err := w.FlushRowGroup()
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	// The CPU time of the process (GC included) says more than the elapsed
	// time on a busy machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
	b.ReportMetric(float64(size)/rows, "B/row")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
