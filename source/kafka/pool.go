package kafka

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/connector-dev/connector/internal/slicepool"
)

// kgoRecordPool lends franz-go the arrays it decodes fetched records into.
// Without it every fetched batch allocates a fresh []kgo.Record (about 150
// bytes a record) that lives only until Reader.emit has converted the
// records. emit calls Record.Recycle after the conversion; the array comes
// back here, zeroed by franz-go, once every record of it was recycled.
//
// Only the record structs are pooled, not the fetch buffers their Key and
// Value point into (kgo.PoolDecompressBytes): record.Record keeps those
// slices until a sink has written them, long after Recycle.
var kgoRecordPool = &recordPool{}

type recordPool struct{ p slicepool.Pool[kgo.Record] }

var _ kgo.PoolRecords = (*recordPool)(nil)

func (rp *recordPool) GetRecords(n int) []kgo.Record { return rp.p.Get(n) }
func (rp *recordPool) PutRecords(rs []kgo.Record)    { rp.p.Put(rs) }
