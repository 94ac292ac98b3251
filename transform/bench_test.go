package transform

import (
	"encoding/json"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/connector-dev/connector/record"
)

// benchRecords returns n order-like values of about 200 bytes, with ids
// repeating every 1000 records (so the dedup drops some) and a status
// the filter drops one time in four.
func benchRecords(n int) []record.Record {
	statuses := []string{"paid", "shipped", "paid", "new"}
	rs := make([]record.Record, n)
	for i := range rs {
		rs[i] = record.Record{
			Topic: "orders", Offset: int64(i), Timestamp: t0.Add(time.Duration(i) * time.Millisecond),
			Value: fmt.Appendf(nil, `{"id":"order-%07d","customer":{"id":%d,"tier":"gold"},"amount":%d.%02d,`+
				`"currency":"EUR","status":"%s","items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"created":"2026-01-02T03:04:05Z"}`,
				i%(n-1000+1), i%977, i%500, i%100, statuses[i%4]),
		}
	}
	return rs
}

func benchChain(b *testing.B, c *Chain) {
	rs := benchRecords(1 << 16)
	vals := make([][]byte, len(rs))
	for i := range rs {
		vals[i] = rs[i].Value
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	kept := 0
	for i := range b.N {
		r := &rs[i&(len(rs)-1)]
		r.Value = vals[i&(len(rs)-1)]
		r.Timestamp = t0.Add(time.Duration(i) * time.Millisecond)
		keep, err := c.Apply(r)
		if err != nil {
			b.Fatal(err)
		}
		if keep {
			kept++
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/record")
	b.ReportMetric(float64(kept)/float64(b.N), "kept/record")
}

// BenchmarkChainFilterProjectDedup: the full path with an in-memory KV.
func BenchmarkChainFilterProjectDedup(b *testing.B) {
	c, err := Build([]Spec{
		{KindFilter, FilterConfig{Condition: Condition{Field: "status", Op: OpIn, Values: []any{"paid", "shipped"}}}},
		{KindProject, ProjectConfig{Keep: []string{"id", "customer", "amount", "status"}, Rename: map[string]string{"customer": "buyer"}}},
		{KindDedup, DedupConfig{Key: "id", TTL: time.Minute}},
	}, NewMemKV())
	if err != nil {
		b.Fatal(err)
	}
	benchChain(b, c)
}

// BenchmarkChainFilterOnly: decode plus one comparison, no re-encoding.
func BenchmarkChainFilterOnly(b *testing.B) {
	c, _ := Build([]Spec{{KindFilter, FilterConfig{Condition: Condition{Field: "customer.id", Op: OpGte, Value: 100}}}}, nil)
	benchChain(b, c)
}

// BenchmarkChainProjectOnly: decode and re-encode every record.
func BenchmarkChainProjectOnly(b *testing.B) {
	c, _ := Build([]Spec{{KindProject, ProjectConfig{Drop: []string{"items"}}}}, nil)
	benchChain(b, c)
}

// BenchmarkChainEmpty: the no-transform path.
func BenchmarkChainEmpty(b *testing.B) {
	benchChain(b, NewChain())
}

// BenchmarkStdlibUnmarshalMap is the reference the chain is measured
// against: decoding into map[string]any, as a naive transform would.
func BenchmarkStdlibUnmarshalMap(b *testing.B) {
	rs := benchRecords(1 << 16)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := range b.N {
		var m map[string]any
		if err := json.Unmarshal(rs[i&(len(rs)-1)].Value, &m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/record")
}

// cpuTime is the process's user+system CPU time in ns: on a shared,
// loaded machine it says more about the code than wall time does.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// discardKV keeps nothing: what is left of a dedup on it is its index.
type discardKV struct{}

func (discardKV) Get([]byte) ([]byte, bool, error)                         { return nil, false, nil }
func (discardKV) Set([]byte, []byte) error                                 { return nil }
func (discardKV) Delete([]byte) error                                      { return nil }
func (discardKV) Expire([]byte, []byte) error                              { return nil }
func (discardKV) Scan([]byte, []byte, func(key, value []byte) error) error { return nil }

// The dedup of bench/'s connector-dedup without its KV: 1M values, each
// back every 1M records (1 ms apart), TTL 900 s: every record is kept and
// its lookups go to two buckets of about a million values. Records come
// in windows of PrefetchWindow, keyed by key_by's field as a worker's
// are, and are prefetched first or not. Run it for a few million records
// (-benchtime 4000000x): the tables reach their size after a million.
func BenchmarkDedupIndexOverAMillionKeys(b *testing.B) {
	for _, prefetch := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", prefetch), func(b *testing.B) {
			c, err := Build([]Spec{{KindDedup, DedupConfig{Key: "u", TTL: 900 * time.Second}}}, discardKV{})
			if err != nil {
				b.Fatal(err)
			}
			c.UseKeyField("u")
			win := make([]record.Record, PrefetchWindow)
			b.ResetTimer()
			for i := 0; i < b.N; i += len(win) {
				for j := range win {
					r := &win[j]
					r.Value = strconv.AppendInt(append(r.Value[:0], `{"u":`...), int64(1_000_000+(i+j)%1_000_000), 10)
					r.KeyField = record.Span{Start: 5, End: int32(len(r.Value))}
					r.Value = append(r.Value, '}')
					r.Timestamp = t0.Add(time.Duration(i+j) * time.Millisecond)
				}
				if prefetch {
					c.Prefetch(win)
				}
				for j := range win {
					if _, err := c.Apply(&win[j]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkFieldReaderRaw: pipeline.key_by's read of one field (the
// whole value validated) from a value of bench/'s ~100 B load.
func BenchmarkFieldReaderRaw(b *testing.B) {
	r := record.Record{Value: []byte(`{"id":"r0000000042","u":"u0000042","h":"h00042","amount":1234.56,"status":"paid","p":"xyzxyzxyzxyzxyz"}`)}
	f := NewFieldReader("u")
	for b.Loop() {
		if raw, ok, err := f.Raw(&r); !ok || err != nil || string(raw) != `"u0000042"` {
			b.Fatal(string(raw), ok, err)
		}
	}
}
