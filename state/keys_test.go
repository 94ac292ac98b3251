package state

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/keygroup"
)

// A key group outside the Store's range is a routing bug: SetKeyGroup says
// so, and no Get, Set or Delete runs until a key group in range is set. A
// Store of several key groups has none set at first.
func TestKeyGroupOutsideTheRangeIsCaught(t *testing.T) {
	s := openCfg(t, Config{Dir: filepath.Join(t.TempDir(), "work"), KeyGroups: keygroup.Range{Start: 10, End: 20}})
	if _, _, err := s.Get([]byte("k")); !errors.Is(err, ErrKeyGroup) || !strings.Contains(err.Error(), "none set") {
		t.Fatalf("Get before SetKeyGroup = %v, want ErrKeyGroup, none set", err)
	}
	if err := s.SetKeyGroup(12); err != nil {
		t.Fatal(err)
	}
	set(t, s, "k", "in 12")
	for _, kg := range []int{-1, 9, 20, keygroup.MaxLimit} {
		err := s.SetKeyGroup(kg)
		if !errors.Is(err, ErrKeyGroup) || !strings.Contains(err.Error(), "not in this store's range [10,20)") {
			t.Fatalf("SetKeyGroup(%d) = %v, want ErrKeyGroup naming the range", kg, err)
		}
		_, _, getErr := s.Get([]byte("k"))
		for op, err := range map[string]error{"Get": getErr, "Set": s.Set([]byte("k"), []byte("x")), "Delete": s.Delete([]byte("k"))} {
			if !errors.Is(err, ErrKeyGroup) {
				t.Fatalf("%s after SetKeyGroup(%d) = %v, want ErrKeyGroup", op, kg, err)
			}
		}
	}
	// Keys are per key group: k of key group 13 is not k of 12.
	if err := s.SetKeyGroup(13); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get([]byte("k")); ok || err != nil {
		t.Fatalf("Get(k) in key group 13 = %v, %v; want missing", ok, err)
	}
	set(t, s, "k", "in 13")
	if got := grouped(t, s); len(got) != 2 || got[12]["k"] != "in 12" || got[13]["k"] != "in 13" {
		t.Fatalf("state = %v, want k in key groups 12 and 13", got)
	}
}

// State written with one max parallelism is refused under another, from a
// full snapshot as from a changelog: its keys would be in the wrong key
// groups. So is a changelog of the format before key groups.
func TestRestoreRefusesAnotherMaxParallelism(t *testing.T) {
	root := t.TempDir()
	all := keygroup.Range{Start: 0, End: 128}
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), KeyGroups: all})
	if err := s.SetKeyGroup(100); err != nil {
		t.Fatal(err)
	}
	set(t, s, "k", "v")
	logOnly := checkpointT(t, s, root, 1)
	full := Chain{Base: snapshot(t, s, filepath.Join(root, "full")).Dir}
	old := filepath.Join(root, "format1.changelog") // "PBCL" 1, no entry, trailer
	format1 := binary.BigEndian.AppendUint64([]byte("PBCL\x01"), 0)
	format1 = binary.BigEndian.AppendUint32(format1, crc32.Checksum(format1, crcTable))
	if err := os.WriteFile(old, format1, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		chain Chain
		max   int
		want  string
	}{
		"full snapshot": {full, 64, "written with max parallelism \"128\", not 64"},
		"changelog":     {logOnly, 64, "written with max parallelism 128, not 64"},
		"format 1":      {Chain{Changelogs: []string{old}}, 128, "has format 1, not 3"},
	} {
		r := keygroup.Range{Start: 0, End: tc.max}
		_, err := Open(Config{Dir: filepath.Join(root, "restore"), MaxParallelism: tc.max, KeyGroups: r,
			Restore: []Restore{{Chain: tc.chain, KeyGroups: r}}}, zerolog.Nop())
		if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v, want ErrIncompatible containing %q", name, err, tc.want)
		}
	}
	wantContents(t, openCfg(t, Config{Dir: filepath.Join(root, "restore"), KeyGroups: all, Restore: []Restore{{Chain: full, KeyGroups: all}}}),
		map[string]string{"k": "v"})
}

// A changelog cut short or altered is refused as damaged, not as
// incompatible: its checksum is checked before its format.
func TestDamagedChangelogIsRefused(t *testing.T) {
	root := t.TempDir()
	s := openT(t, root, "")
	set(t, s, "a", "1")
	set(t, s, "b", "2")
	c := checkpointT(t, s, root, 1)
	good, err := os.ReadFile(c.Changelogs[0])
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(changelogMagic)] ^= 0x03 // the format byte
	for name, b := range map[string][]byte{"cut short": good[:len(good)-1], "format byte altered": flipped, "empty": nil} {
		path := filepath.Join(root, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(Config{Dir: filepath.Join(root, "restore"), KeyGroups: solo, Restore: whole(Chain{Changelogs: []string{path}})}, zerolog.Nop())
		if !errors.Is(err, errBadChangelog) || errors.Is(err, ErrIncompatible) {
			t.Errorf("%s: Open = %v, want a damaged changelog", name, err)
		}
	}
}

// Expire removes a range of keys from every key group at once, and is not
// in the changelog: a restore from changelogs brings the keys back (the
// transform that expired them reads them no more), while a full snapshot
// taken after it does not have them.
func TestExpireRemovesARangeFromEveryKeyGroupAndIsNotLogged(t *testing.T) {
	root := t.TempDir()
	kgs := keygroup.Range{Start: 0, End: 4}
	s := openCfg(t, Config{Dir: filepath.Join(root, "work"), KeyGroups: kgs})
	for kg := kgs.Start; kg < kgs.End; kg++ {
		if err := s.SetKeyGroup(kg); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"b/1", "b/2", "c/1"} {
			set(t, s, k, "v")
		}
	}
	wantKeys := func(s *Store, want ...string) {
		t.Helper()
		g := grouped(t, s)
		for kg := kgs.Start; kg < kgs.End; kg++ {
			var got []string
			for k := range g[kg] {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("key group %d holds %v, want %v", kg, got, want)
			}
		}
	}
	if err := s.Expire([]byte("b/"), []byte("b0")); err != nil {
		t.Fatal(err)
	}
	wantKeys(s, "c/1")
	chain := checkpointT(t, s, filepath.Join(root, "chk"), 1)
	if chain.Base != "" {
		t.Fatalf("checkpoint 1 took a full snapshot (%s), want a changelog", chain.Base)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := openCfg(t, Config{Dir: filepath.Join(root, "work2"), KeyGroups: kgs, Restore: []Restore{{Chain: chain, KeyGroups: kgs}}})
	wantKeys(r, "b/1", "b/2", "c/1")
	if err := r.Expire([]byte("b/"), []byte("b0")); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	if _, err := r.Snapshot(full); err != nil {
		t.Fatal(err)
	}
	f := openCfg(t, Config{Dir: filepath.Join(root, "work3"), KeyGroups: kgs, Restore: []Restore{{Chain: Chain{Base: full}, KeyGroups: kgs}}})
	wantKeys(f, "c/1")
}
