package store

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/connector-dev/connector/checkpoint"
)

// reseal recomputes the checksum, so a test can damage a field without the
// checksum catching it first.
func reseal(file []byte) []byte {
	binary.BigEndian.PutUint32(file[14:], checksum(file))
	return file
}

func TestDecodeRejectsEveryDamagedFileAsCorrupt(t *testing.T) {
	good, err := encode(meta(1, "w/1.sst"))
	must(t, err)
	withBody := func(body string) []byte {
		f := slices.Concat(good[:headerSize], []byte(body))
		binary.BigEndian.PutUint32(f[10:], uint32(len(body)))
		return reseal(f)
	}
	cases := map[string][]byte{
		"empty":              {},
		"truncated header":   good[:headerSize-1],
		"truncated body":     good[:len(good)-1],
		"header only":        good[:headerSize],
		"trailing byte":      append(slices.Clone(good), 0),
		"bad magic":          reseal(slices.Concat([]byte("XONNCKPT"), good[8:])),
		"body not json":      withBody("{not json"),
		"path leaves root":   withBody(`{"id":1,"tasks":{"w":{"files":["../etc/passwd"]}}}`),
		"absolute path":      withBody(`{"id":1,"tasks":{"w":{"files":["/etc/passwd"]}}}`),
		"zeroed (lost data)": make([]byte, len(good)),
	}
	// Version 2, otherwise a perfect file.
	v2 := slices.Clone(good)
	binary.BigEndian.PutUint16(v2[8:], 2)
	cases["unknown version"] = reseal(v2)
	huge := slices.Clone(good)
	binary.BigEndian.PutUint32(huge[10:], maxBodySize+1)
	cases["huge length"] = reseal(huge)
	for name, file := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decode(file); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error = %v, want ErrCorrupt", err)
			}
		})
	}
	if _, err := decode(good); err != nil {
		t.Fatalf("decode of the intact file: %v", err)
	}
}

func TestEverySingleByteFlipIsDetected(t *testing.T) {
	good, err := encode(meta(1, "w/1.sst"))
	must(t, err)
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0x01
		if _, err := decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip of byte %d: error = %v, want ErrCorrupt", i, err)
		}
	}
}

// damage rewrites checkpoint id's metadata file with f(contents).
func damage(t *testing.T, fs vfs.FS, id checkpoint.ID, f func([]byte) []byte) {
	t.Helper()
	name := fs.PathJoin(testDir, metaName(id))
	buf, err := readFile(fs, name)
	must(t, err)
	out, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	must(t, err)
	_, err = out.Write(f(buf))
	must(t, err)
	must(t, out.Sync())
	must(t, out.Close())
}

func TestLoadLatestFallsBackAndNamesWhatItSkippedWhenTheNewestIsCorrupt(t *testing.T) {
	damages := map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)/2] },
		"wrong version": func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[8:], 9)
			return reseal(b)
		},
	}
	for name, f := range damages {
		t.Run(name, func(t *testing.T) {
			mem := newMem(t)
			writeState(t, mem, "w/1.sst", "w/2.sst")
			s, _ := openStore(t, mem, 2)
			must(t, s.Save(meta(1, "w/1.sst")))
			must(t, s.Save(meta(2, "w/2.sst")))
			damage(t, mem, 2, f)

			if _, err := s.Load(2); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load(2) error = %v, want ErrCorrupt", err)
			}
			got, skipped, err := s.LoadLatest()
			must(t, err)
			if got == nil || got.ID != 1 {
				t.Fatalf("LoadLatest = %v, want checkpoint 1", got)
			}
			assertSkipped(t, skipped, 2)
			if s.MaxID() != 2 {
				t.Fatalf("MaxID = %d, want 2: a corrupt file still counts", s.MaxID())
			}
		})
	}
}

// assertSkipped checks that LoadLatest skipped exactly the checkpoints ids,
// each with a reason classed ErrCorrupt.
func assertSkipped(t *testing.T, skipped []Skipped, ids ...checkpoint.ID) {
	t.Helper()
	var got []checkpoint.ID
	for _, sk := range skipped {
		got = append(got, sk.ID)
		if !errors.Is(sk.Err, ErrCorrupt) {
			t.Errorf("checkpoint %d skipped for %v, want ErrCorrupt", sk.ID, sk.Err)
		}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("skipped %v, want %v", got, ids)
	}
}

func TestLoadLatestSkipsACheckpointWhoseStateFileIsMissing(t *testing.T) {
	mem := newMem(t)
	writeState(t, mem, "w/1.sst", "w/2.sst")
	s, _ := openStore(t, mem, 2)
	must(t, s.Save(meta(1, "w/1.sst")))
	must(t, s.Save(meta(2, "w/2.sst")))
	must(t, mem.Remove(mem.PathJoin(testState, "w/2.sst")))

	got, skipped, err := s.LoadLatest()
	must(t, err)
	if got == nil || got.ID != 1 {
		t.Fatalf("LoadLatest = %v, want checkpoint 1", got)
	}
	assertSkipped(t, skipped, 2)
	infos, err := s.List()
	must(t, err)
	if infos[1].Missing != 1 || !errors.Is(infos[1].Err, ErrCorrupt) {
		t.Fatalf("List entry for 2 = %+v, want 1 missing file and ErrCorrupt", infos[1])
	}
}

func TestLoadLatestReturnsNilWhenEveryCheckpointIsCorrupt(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 2)
	must(t, s.Save(meta(1)))
	damage(t, mem, 1, func(b []byte) []byte { return b[:3] })
	got, skipped, err := s.LoadLatest()
	if got != nil || err != nil {
		t.Fatalf("LoadLatest = %v, %v; want nil, nil", got, err)
	}
	assertSkipped(t, skipped, 1)
	infos, err := s.List()
	must(t, err)
	if len(infos) != 1 || infos[0].MetaBytes != 3 || !errors.Is(infos[0].Err, ErrCorrupt) {
		t.Fatalf("List = %+v, want one corrupt 3-byte entry", infos)
	}
}

func TestAMetadataFileUnderAnotherIDsNameIsCorrupt(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 3)
	must(t, s.Save(meta(1)))
	must(t, s.Save(meta(2)))
	one, err := readFile(mem, mem.PathJoin(testDir, metaName(1)))
	must(t, err)
	damage(t, mem, 2, func([]byte) []byte { return one })
	if _, err := s.Load(2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load(2) error = %v, want ErrCorrupt", err)
	}
}

func TestLoadLatestReturnsAReadErrorInsteadOfFallingBack(t *testing.T) {
	mem := newMem(t)
	s, _ := openStore(t, mem, 2)
	must(t, s.Save(meta(1)))
	must(t, s.Save(meta(2)))
	must(t, s.Close())

	failRead := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileRead && op.Path == mem.PathJoin(testDir, metaName(2)) {
			return errorfs.ErrInjected
		}
		return nil
	})
	s, _ = openStore(t, errorfs.Wrap(mem, failRead), 2)
	if md, _, err := s.LoadLatest(); !errors.Is(err, errorfs.ErrInjected) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("LoadLatest = %v, %v; want the injected read error", md, err)
	}
	if _, err := s.List(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("List error = %v, want the injected read error", err)
	}
}
