package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/rs/zerolog"
)

// TestADamagedNewestCheckpointInStorageIsReportedAsSkipped: the newest
// checkpoint in checkpoint storage is damaged. On a new machine LoadLatest
// reports it as skipped, as it does a damaged local metadata file, so that
// the runtime's checkpoint.on_unrestorable policy (default: fail) decides.
// Before, the older checkpoint came back with nothing skipped, and the job
// restored older offsets although the sinks may have committed the newer
// checkpoint's output: written twice.
func TestADamagedNewestCheckpointInStorageIsReportedAsSkipped(t *testing.T) {
	r := newMemRemote()
	a, memA := attached(t, r, 3)
	writeState(t, memA, "chk-1/worker-1.changelog", "chk-2/worker-1.changelog")
	must(t, a.Save(meta(1, "chk-1/worker-1.changelog")))
	must(t, a.Save(meta(2, "chk-1/worker-1.changelog", "chk-2/worker-1.changelog")))
	must(t, a.Close())
	key := metaName(2)
	damaged := bytes.Clone(r.objects[key])
	damaged[len(damaged)-2] ^= 0xff // one flipped bit in the body: the checksum fails
	r.objects[key] = damaged

	b, _ := attached(t, r, 3) // a new machine
	md, skipped, err := b.LoadLatest()
	must(t, err)
	if md == nil || md.ID != 1 || len(skipped) != 1 || skipped[0].ID != 2 || !errors.Is(skipped[0].Err, ErrCorrupt) {
		t.Fatalf("LoadLatest = checkpoint %v, skipped %v; want checkpoint 1, and 2 (in storage, damaged) skipped as corrupt", md, skipped)
	}
}

// TestAReleaseUnderADotSlashStateRootDeletes: the runtime's state paths
// are filepath.Join(cfg.State.Dir, rel) (pipeline/statefiles.go), and
// state.dir defaults to "./data/state". Join cleans away the "./"; the
// store took the path for one relative to the root and removed
// <root>/<that path>, which does not exist: a released snapshot or a
// failed changelog was never deleted while the job ran.
func TestAReleaseUnderADotSlashStateRootDeletes(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := Open(vfs.Default, "./data/checkpoints", "./data/state", 1, zerolog.Nop())
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	dir := filepath.Join("./data/state", FullSnapshotPath(5, 0)) // as pipeline's stateFiles.abs builds it
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "000001.sst"), []byte("a released snapshot"), 0o644))
	s.Release(dir)
	s.Collect()
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("released %s is still there after Collect", dir)
	}
}

// TestAFailedDeletionOfReleasedFilesIsRetried: a released snapshot whose
// deletion failed is deleted by the next Save, as the package doc says;
// Collect dropped it from the released list, and it stayed until the next
// start.
func TestAFailedDeletionOfReleasedFilesIsRetried(t *testing.T) {
	mem := newMem(t)
	fail := true
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if fail && op.Kind == errorfs.OpRemoveAll {
			return errorfs.ErrInjected
		}
		return nil
	}))
	s, _ := openStore(t, fs, 1)
	writeState(t, mem, "full/chk-00000000000000000005-worker-0/000001.sst")
	s.Release("full/chk-00000000000000000005-worker-0")
	s.Collect() // fails to delete
	fail = false
	writeState(t, mem, "chk-6/worker-0.changelog")
	must(t, s.Save(meta(6, "chk-6/worker-0.changelog")))
	if stateExists(mem, "full/chk-00000000000000000005-worker-0/000001.sst") {
		t.Fatal("a released snapshot whose deletion failed once is never deleted again (until restart)")
	}
}
