package parquetfile

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// zstdWindow is the zstd window of a page: a page's plain-encoded data
// reaches pageSize by at most one value.
const zstdWindow = pageSize

// zstdEncoders are zstd encoders not in use. parquet-go's zstd codec keeps
// its encoders in a pool that every garbage collection empties, and a new
// encoder allocates and clears its tables at its first page; these are kept
// for good (there are never more than pages being compressed at once).
var zstdEncoders struct {
	sync.Mutex
	free []*zstd.Encoder
}

// compressPage returns the page data src compressed with codec into dst.
func compressPage(codec compress.Codec, dst, src []byte) ([]byte, error) {
	if codec.CompressionCodec() != format.Zstd {
		return codec.Encode(dst, src)
	}
	zstdEncoders.Lock()
	var e *zstd.Encoder
	if n := len(zstdEncoders.free); n > 0 {
		e = zstdEncoders.free[n-1]
		zstdEncoders.free = zstdEncoders.free[:n-1]
	}
	zstdEncoders.Unlock()
	if e == nil {
		var err error
		// The options of parquet-go's codec, which the files had before,
		// but a window of a page: the default 8 MiB window gives each
		// encoder a 16 MiB history buffer, which a page of 1 MiB never
		// fills (EncodeAll compresses each page as a frame of its own).
		e, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithWindowSize(zstdWindow))
		if err != nil {
			return nil, err
		}
	}
	dst = e.EncodeAll(src, dst[:0])
	zstdEncoders.Lock()
	zstdEncoders.free = append(zstdEncoders.free, e)
	zstdEncoders.Unlock()
	return dst, nil
}
