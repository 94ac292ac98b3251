package file

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/connector-dev/connector/sink"
)

// TestStatsCountBytesWrittenAndFilesCommittedOnce: BytesWritten is every
// byte in the part files, FilesCommitted every rename into place; a commit
// repeated (after a restart) counts nothing again.
func TestStatsCountBytesWrittenAndFilesCommittedOnce(t *testing.T) {
	fs := vfs.NewMem()
	s := newTestFile(t, fs, func(c *Config) { c.RollSize = 2 << 10 }) // several parts
	w := newTestWriter(t, s, 0)
	if got := s.Stats(); got != (sink.Stats{}) {
		t.Errorf("stats of a new sink = %+v", got)
	}
	writeRange(t, w, 0, 200)
	cs := preCommit(t, w, 1)
	commit(t, s, cs)
	commit(t, s, cs)
	visible, _ := listDir(t, fs)
	var size uint64
	for _, name := range visible {
		size += uint64(len(readFile(t, fs, name)))
	}
	got := s.Stats()
	if len(visible) < 2 || got.FilesCommitted != uint64(len(visible)) {
		t.Errorf("FilesCommitted = %d, want the %d files visible", got.FilesCommitted, len(visible))
	}
	if got.BytesWritten != size {
		t.Errorf("BytesWritten = %d, want the %d bytes of the visible files", got.BytesWritten, size)
	}
}
