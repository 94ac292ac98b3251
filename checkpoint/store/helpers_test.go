package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
	"github.com/connector-dev/connector/internal/fsutil"
)

const (
	testDir   = "/ckpt"
	testState = "/state"
)

// newMem returns a crashable MemFS with the metadata dir and state root
// created and synced.
func newMem(t *testing.T) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewCrashableMem()
	must(t, mem.MkdirAll(testDir, 0o755))
	must(t, mem.MkdirAll(testState, 0o755))
	must(t, fsutil.SyncDir(mem, "/"))
	return mem
}

// writeState creates durable state files under the state root.
func writeState(t *testing.T, fs vfs.FS, names ...string) {
	t.Helper()
	for _, name := range names {
		p := fs.PathJoin(testState, name)
		dir := fs.PathDir(p)
		must(t, fs.MkdirAll(dir, 0o755))
		f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
		must(t, err)
		_, err = f.Write([]byte("contents of " + name))
		must(t, err)
		must(t, f.Sync())
		must(t, f.Close())
		must(t, fsutil.SyncDir(fs, dir))
		must(t, fsutil.SyncDir(fs, fs.PathDir(dir)))
	}
}

// meta builds checkpoint id: a source with offsets and a worker whose state
// is the given files.
func meta(id checkpoint.ID, files ...string) checkpoint.Metadata {
	return checkpoint.Metadata{
		ID:        id,
		Timestamp: time.Unix(1_700_000_000+int64(id), 0).UTC(),
		Tasks: map[checkpoint.TaskID]checkpoint.Snapshot{
			"source":   {Data: fmt.Appendf(nil, `{"orders/0":%d}`, id*100)},
			"worker-1": {Data: []byte("handle"), Files: files},
		},
	}
}

// openStore opens a store whose log goes to the returned buffer.
func openStore(t *testing.T, fs vfs.FS, retained int) (*Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	s, err := Open(fs, testDir, testState, retained, zerolog.New(&logs))
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, &logs
}

func stateExists(fs vfs.FS, name string) bool {
	_, err := fs.Stat(fs.PathJoin(testState, name))
	return err == nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logLines decodes zerolog JSON output.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		must(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

// ids of the checkpoints List reports as restorable.
func restorable(t *testing.T, s *Store) []checkpoint.ID {
	t.Helper()
	infos, err := s.List()
	must(t, err)
	var ids []checkpoint.ID
	for _, in := range infos {
		if in.Err == nil {
			ids = append(ids, in.ID)
		}
	}
	return ids
}
