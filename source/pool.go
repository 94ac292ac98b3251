package source

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoRecordPool lends franz-go the arrays it decodes fetched records into.
// Without it every fetched batch allocates a fresh []kgo.Record (about 150
// bytes a record) that lives only until Reader.emit has converted the
// records. emit calls Record.Recycle after the conversion; the array comes
// back here once every record of it was recycled.
//
// Only the record structs are pooled, not the fetch buffers their Key and
// Value point into (kgo.PoolDecompressBytes): record.Record keeps those
// slices until a sink has written them, long after Recycle.
var kgoRecordPool = &recordPool{}

type recordPool struct{ p sync.Pool }

var _ kgo.PoolRecords = (*recordPool)(nil)

func (rp *recordPool) GetRecords(n int) []kgo.Record {
	if v, ok := rp.p.Get().(*[]kgo.Record); ok && cap(*v) >= n {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (rp *recordPool) PutRecords(rs []kgo.Record) {
	rp.p.Put(&rs)
}
