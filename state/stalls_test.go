package state

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/syncbuf"
)

// TestAWriteStallIsCountedAndLogged: with the memtables' flushes held (their
// sstable writes blocked), the writer's Sets fill every memtable Pebble
// allows and stall; the stall, held for 100 ms on purpose, is counted with
// its time and logged with Pebble's reason once the flushes go on.
func TestAWriteStallIsCountedAndLogged(t *testing.T) {
	root := t.TempDir()
	release := make(chan struct{})
	var hold atomic.Bool // from after Open, which flushes the Store's markers
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if hold.Load() && op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".sst") {
			<-release
		}
		return nil
	}))
	testPebbleOptions = func(o *pebble.Options) { o.MemTableSize = 256 << 10; o.MemTableStopWritesThreshold = 2 }
	t.Cleanup(func() { testPebbleOptions = nil })
	var logs syncbuf.Buffer
	s, err := Open(Config{Dir: filepath.Join(root, "work"), KeyGroups: solo, FS: fs}, zerolog.New(&logs).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hold.Store(true)
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) }) // a failing test must not leave Close waiting

	done := make(chan error, 1)
	go func() {
		value := bytes.Repeat([]byte("v"), 100)
		for i := range 50_000 { // 5 MB: many times the two 256 KiB memtables
			if err := s.Set(fmt.Appendf(nil, "key-%08d", i), value); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	deadline := time.Now().Add(30 * time.Second)
	for s.stalls.began.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the writer finished (%v) without a stall, with every flush held", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no write stall within 30 s with every flush held")
		}
		time.Sleep(time.Millisecond)
	}
	if n, _ := s.WriteStalls(); n != 0 {
		t.Fatalf("%d stalls counted while the first is under way; want them counted when they end", n)
	}
	time.Sleep(100 * time.Millisecond) // the stall's length: above stallLogAfter
	releaseOnce.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, total := s.WriteStalls()
	if n < 1 || total < 100*time.Millisecond {
		t.Fatalf("WriteStalls = %d, %v; want at least one stall of at least the 100 ms it was held", n, total)
	}
	if out := logs.String(); !strings.Contains(out, "state writes stalled") || !strings.Contains(out, `"reason":"`) {
		t.Fatalf("log: %s; want the stall logged with its reason", out)
	}
	t.Logf("%d stalls, %v in all; log: %s", n, total, strings.TrimSpace(logs.String()))
}
