package parquetfile

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestAZstdEncoderHoldsAPageNotItsDefaultWindow: a new encoder's first
// page allocates its history once and keeps it, so a default 8 MiB
// window held 16 MiB per encoder for pages of 1 MiB (32 of a Parquet
// drain's 112 MB of heap). A page's window holds what a page can use.
func TestAZstdEncoderHoldsAPageNotItsDefaultWindow(t *testing.T) {
	codec := (&Schema{Compression: CompressionZstd}).codec()
	page := bytes.Repeat([]byte("0123456789abcdefghij-page-of-a-column "), pageSize/38)
	zstdEncoders.Lock()
	saved := zstdEncoders.free
	zstdEncoders.free = nil // a new encoder
	zstdEncoders.Unlock()
	defer func() {
		zstdEncoders.Lock()
		zstdEncoders.free = saved
		zstdEncoders.Unlock()
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := compressPage(codec, nil, page)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 6<<20 {
		t.Errorf("a new encoder's first page allocated %d MiB, want under 6 (a 16 MiB history is the default window's)", got>>20)
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	back, err := d.DecodeAll(out, nil)
	if err != nil || !bytes.Equal(back, page) {
		t.Fatalf("the page does not come back: %v", err)
	}
}
