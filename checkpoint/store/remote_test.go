package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/checkpoint"
)

// memRemote is an in-memory Remote; failPut makes every Put of a key with
// that prefix fail.
type memRemote struct {
	mu      sync.Mutex
	objects map[string][]byte
	failPut string
	puts    []string
}

func newMemRemote() *memRemote { return &memRemote{objects: map[string][]byte{}} }

var errInjected = errors.New("injected remote failure")

func (m *memRemote) Put(_ context.Context, key string, body io.Reader, size int64) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("put %s: %d bytes, size says %d", key, len(b), size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failPut != "" && strings.HasPrefix(key, m.failPut) {
		return errInjected
	}
	m.objects[key] = b
	m.puts = append(m.puts, key)
	return nil
}

func (m *memRemote) Get(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(bytes.Clone(b))), nil // pebble mangles buffers handed to Write under -race
}

func (m *memRemote) List(_ context.Context, prefix string) (map[string]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for k, b := range m.objects {
		if strings.HasPrefix(k, prefix) {
			out[k] = int64(len(b))
		}
	}
	return out, nil
}

func (m *memRemote) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

func (m *memRemote) String() string { return "mem://" }

func (m *memRemote) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.objects))
}

// attached opens a store over a fresh "machine" (its own MemFS) with r
// attached.
func attached(t *testing.T, r Remote, retained int) (*Store, vfs.FS) {
	t.Helper()
	mem := newMem(t)
	s, _ := openStore(t, mem, retained)
	must(t, s.AttachRemote(context.Background(), r))
	return s, mem
}

// A checkpoint saved on one machine is restored on another whose
// directories are empty: its metadata and every state file it references
// come down, and the ids go on above it.
func TestRemoteCheckpointRestoresOnAnotherMachine(t *testing.T) {
	r := newMemRemote()
	a, memA := attached(t, r, 2)
	writeState(t, memA, "chk-1/worker-1.changelog", "full/chk-2-worker-1/000001.sst")
	must(t, a.Save(meta(1, "chk-1/worker-1.changelog")))
	must(t, a.Save(meta(2, "chk-1/worker-1.changelog", "full/chk-2-worker-1/000001.sst")))
	must(t, a.Close())

	b, memB := attached(t, r, 2)
	md, skipped, err := b.LoadLatest()
	must(t, err)
	if md == nil || md.ID != 2 || len(skipped) != 0 {
		t.Fatalf("on the new machine LoadLatest = %v (skipped %v), want checkpoint 2", md, skipped)
	}
	for _, f := range []string{"chk-1/worker-1.changelog", "full/chk-2-worker-1/000001.sst"} {
		got, err := readFile(memB, memB.PathJoin(testState, f))
		must(t, err)
		if string(got) != "contents of "+f {
			t.Errorf("state file %s on the new machine holds %q", f, got)
		}
	}
	if b.MaxID() != 2 {
		t.Errorf("MaxID = %d, want 2", b.MaxID())
	}
	// The new machine goes on; retention (2) applies on the remote too.
	writeState(t, memB, "chk-3/worker-1.changelog")
	must(t, b.Save(meta(3, "chk-1/worker-1.changelog", "full/chk-2-worker-1/000001.sst", "chk-3/worker-1.changelog")))
	writeState(t, memB, "full/chk-4-worker-1/000002.sst")
	must(t, b.Save(meta(4, "full/chk-4-worker-1/000002.sst")))
	want := []string{"chk-00000000000000000003.meta", "chk-00000000000000000004.meta",
		"state/chk-1/worker-1.changelog", "state/chk-3/worker-1.changelog",
		"state/full/chk-2-worker-1/000001.sst", "state/full/chk-4-worker-1/000002.sst"}
	if got := r.keys(); !slices.Equal(got, want) {
		t.Errorf("remote after retention:\n got %v\nwant %v", got, want)
	}
	writeState(t, memB, "chk-5/worker-1.changelog")
	must(t, b.Save(meta(5, "full/chk-4-worker-1/000002.sst", "chk-5/worker-1.changelog")))
	want = []string{"chk-00000000000000000004.meta", "chk-00000000000000000005.meta",
		"state/chk-5/worker-1.changelog", "state/full/chk-4-worker-1/000002.sst"}
	if got := r.keys(); !slices.Equal(got, want) {
		t.Errorf("remote after a second retention:\n got %v\nwant %v", got, want)
	}
}

// A state file already on the remote is not uploaded again.
func TestRemoteUploadsEachStateFileOnce(t *testing.T) {
	r := newMemRemote()
	s, mem := attached(t, r, 3)
	writeState(t, mem, "full/chk-1-worker-1/000001.sst", "chk-2/worker-1.changelog")
	must(t, s.Save(meta(1, "full/chk-1-worker-1/000001.sst")))
	must(t, s.Save(meta(2, "full/chk-1-worker-1/000001.sst", "chk-2/worker-1.changelog")))
	var sst int
	for _, k := range r.puts {
		if k == "state/full/chk-1-worker-1/000001.sst" {
			sst++
		}
	}
	if sst != 1 {
		t.Errorf("the shared sstable was uploaded %d times (puts %v)", sst, r.puts)
	}
}

// A checkpoint whose upload fails is not durable: nothing is written
// locally, the earlier checkpoint stays the newest everywhere, and the next
// save goes through.
func TestRemoteFailureFailsTheCheckpoint(t *testing.T) {
	for _, failing := range []string{"state/", "chk-"} {
		t.Run(failing, func(t *testing.T) {
			r := newMemRemote()
			s, mem := attached(t, r, 3)
			writeState(t, mem, "chk-1/worker-1.changelog", "chk-2/worker-1.changelog", "chk-3/worker-1.changelog")
			must(t, s.Save(meta(1, "chk-1/worker-1.changelog")))
			r.failPut = failing
			err := s.Save(meta(2, "chk-1/worker-1.changelog", "chk-2/worker-1.changelog"))
			if !errors.Is(err, ErrNotDurable) || !errors.Is(err, errInjected) {
				t.Fatalf("Save with a failing remote: %v, want ErrNotDurable wrapping the cause", err)
			}
			if ids := restorable(t, s); !slices.Equal(ids, []checkpoint.ID{1}) {
				t.Errorf("local checkpoints after the failed save: %v, want [1]", ids)
			}
			if slices.Contains(r.keys(), "chk-00000000000000000002.meta") {
				t.Error("the failed checkpoint's metadata is on the remote")
			}
			r.failPut = ""
			must(t, s.Save(meta(3, "chk-1/worker-1.changelog", "chk-3/worker-1.changelog")))
			b, _ := attached(t, r, 3)
			md, _, err := b.LoadLatest()
			must(t, err)
			if md == nil || md.ID != 3 {
				t.Fatalf("another machine restores %v, want checkpoint 3", md)
			}
			if slices.Contains(r.keys(), "state/chk-2/worker-1.changelog") {
				t.Error("the failed checkpoint's state file was not cleaned from the remote")
			}
		})
	}
}

// A machine whose local directory is behind the remote (another machine
// went on from it) restores the remote's newest; one that is level keeps
// its own files and downloads nothing.
func TestRemoteNewerThanLocalWins(t *testing.T) {
	r := newMemRemote()
	a, memA := attached(t, r, 3)
	writeState(t, memA, "chk-1/worker-1.changelog")
	must(t, a.Save(meta(1, "chk-1/worker-1.changelog")))
	must(t, a.Close())

	b, memB := attached(t, r, 3)
	writeState(t, memB, "chk-2/worker-1.changelog")
	must(t, b.Save(meta(2, "chk-1/worker-1.changelog", "chk-2/worker-1.changelog")))
	must(t, b.Close())

	// Machine A again, with its old directory: it must see checkpoint 2.
	a2, logs := openStore(t, memA, 3)
	must(t, a2.AttachRemote(context.Background(), r))
	md, _, err := a2.LoadLatest()
	must(t, err)
	if md == nil || md.ID != 2 {
		t.Fatalf("the old machine restores %v, want checkpoint 2", md)
	}
	if !strings.Contains(logs.String(), `"downloaded":1`) {
		t.Errorf("want one checkpoint downloaded; log: %s", logs)
	}
	// Level with the remote: nothing to download.
	must(t, a2.Close())
	a3, logs := openStore(t, memA, 3)
	must(t, a3.AttachRemote(context.Background(), r))
	if !strings.Contains(logs.String(), `"downloaded":0`) {
		t.Errorf("want nothing downloaded; log: %s", logs)
	}
}

// Metadata on the remote that does not verify is not restored, and while
// it sits in the retention window no state file is deleted there.
func TestRemoteCorruptMetadataIsSkipped(t *testing.T) {
	r := newMemRemote()
	a, memA := attached(t, r, 3)
	writeState(t, memA, "chk-1/worker-1.changelog")
	must(t, a.Save(meta(1, "chk-1/worker-1.changelog")))
	must(t, a.Close())
	r.objects["chk-00000000000000000002.meta"] = []byte("not a checkpoint")

	var logs bytes.Buffer
	mem := newMem(t)
	b, err := Open(mem, testDir, testState, 3, zerolog.New(&logs))
	must(t, err)
	t.Cleanup(func() { _ = b.Close() })
	must(t, b.AttachRemote(context.Background(), r))
	md, _, err := b.LoadLatest()
	must(t, err)
	if md == nil || md.ID != 1 {
		t.Fatalf("restores %v, want checkpoint 1", md)
	}
	if b.MaxID() != 2 {
		t.Errorf("MaxID = %d, want 2 (the corrupt checkpoint's id is taken)", b.MaxID())
	}
	if !strings.Contains(logs.String(), "does not verify") {
		t.Errorf("the corrupt checkpoint is not logged: %s", logs.String())
	}
	writeState(t, mem, "chk-3/worker-1.changelog")
	must(t, b.Save(meta(3, "chk-3/worker-1.changelog")))
	if !slices.Contains(r.keys(), "state/chk-1/worker-1.changelog") {
		t.Error("a state file was deleted while a corrupt checkpoint in the window hides what it references")
	}
}

// A save that died after uploading its state files and before its metadata
// leaves files named for its id on the remote. A new machine must not use
// that id again: its own files of the same names (other contents) would be
// taken for uploaded, and the checkpoint would restore the dead save's
// files (seen in the e2e test as "object size mismatch" at restore). And a
// state file on the remote whose size is not the local one's is uploaded
// again, whatever its name says.
func TestRemoteNeverReusesTheIdOfAnUnfinishedSave(t *testing.T) {
	// Real names: ids zero-padded (checkpoint.ID.Name), as the state
	// package writes them.
	full := func(id checkpoint.ID, file string) string { return FullSnapshotPath(id, 1) + "/" + file }
	r := newMemRemote()
	a, memA := attached(t, r, 3)
	writeState(t, memA, full(1, "000001.sst"))
	must(t, a.Save(meta(1, full(1, "000001.sst"))))
	must(t, a.Close())
	// The dead save of checkpoint 2: its files only.
	r.objects["state/"+full(2, "000002.sst")] = []byte("the dead save's sstable")
	r.objects["state/"+ChangelogPath(2, 1)] = []byte("the dead save's changelog")

	b, memB := attached(t, r, 3)
	if b.MaxID() != 2 {
		t.Fatalf("MaxID = %d on the new machine, want 2 (the unfinished save's id)", b.MaxID())
	}
	if err := b.Save(meta(2, full(1, "000001.sst"))); !errors.Is(err, ErrInvalid) {
		t.Errorf("saving checkpoint 2 again: %v, want ErrInvalid", err)
	}

	// A remote file of a name the next checkpoint uses, with other
	// contents (so another size): uploaded again.
	r.objects["state/"+full(3, "000003.sst")] = []byte("stale")
	writeState(t, memB, full(3, "000003.sst"))
	must(t, b.Save(meta(3, full(3, "000003.sst"))))
	if got := string(r.objects["state/"+full(3, "000003.sst")]); got != "contents of "+full(3, "000003.sst") {
		t.Errorf("the remote holds %q for checkpoint 3's sstable, want the local file", got)
	}
}
